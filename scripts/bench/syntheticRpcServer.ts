import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/**
 * A JSON-RPC server that serves a large, deterministic set of Transfer logs (`logsPerBlock` in each
 * of `blocks` blocks) so a benchmark measures the indexer, not the node. Answers are built as
 * strings straight from the block number (no per-log objects, no JSON.stringify), or served from
 * bytes rendered before it listens (Rendered).
 */
export type SyntheticChain = {
  chainId: number;
  token: string;
  blocks: number;
  logsPerBlock: number;
};

const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const hex64 = (n: number, salt: string) =>
  `0x${salt}${n.toString(16).padStart(64 - salt.length, "0")}`;
const quantity = (n: number) => `0x${n.toString(16)}`;
const GENESIS_TIME = 1_700_000_000;
/** Schema 0, code "bc_b8nos5a8" (ERC-8021 draft, ethereum/ERCs PR 1209). */
const ATTRIBUTION_SUFFIX = "62635f62386e6f733561380b0080218021802180218021802180218021";

/**
 * Transaction `k`'s hash: 8 scattered hex digits, then k. Real hashes are random, and where a
 * random key lands in a b-tree is what storing one costs: sequential hashes would flatter the
 * attribution tables (keyed by hash). The tail still tells the server which transaction is asked for.
 */
export const txHash = (k: number) =>
  `0x${(Math.imul(k, 0x9e3779b1) >>> 0).toString(16).padStart(8, "0")}${k.toString(16).padStart(56, "0")}`;
const txOfHash = (hash: string) => Number.parseInt(hash.slice(10), 16);

function blockHash(n: number): string {
  return hex64(n, "b1");
}

/** Block `n`'s header up to its transactions' array (`"transactions":`), which the caller closes. */
function headerStart(n: number): string {
  return `{"number":"${quantity(n)}","hash":"${blockHash(n)}","parentHash":"${n === 0 ? hex64(0, "00") : blockHash(n - 1)}","timestamp":"${quantity(GENESIS_TIME + 2 * n)}","transactions":`;
}

/** Block `n`, with its transactions whole when `full` (eth_getBlockByNumber(n, true)). */
function block(chain: SyntheticChain, n: number, full: boolean): string {
  const transactions = full
    ? Array.from({ length: chain.logsPerBlock }, (_, i) => transaction(chain, n * 10_000 + i)).join(
        ",",
      )
    : "";
  return `${headerStart(n)}[${transactions}]}`;
}

function logsOf(chain: SyntheticChain, n: number): string[] {
  const logs: string[] = [];
  const hash = blockHash(n);
  for (let i = 0; i < chain.logsPerBlock; i++) {
    const from = `0x000000000000000000000000${(n * 7 + i).toString(16).padStart(40, "0")}`;
    const to = `0x000000000000000000000000${(n * 13 + i + 1).toString(16).padStart(40, "0")}`;
    logs.push(
      `{"address":"${chain.token}","topics":["${TRANSFER}","${from}","${to}"],"data":"${hex64(n * 1000 + i + 1, "")}",` +
        `"blockNumber":"${quantity(n)}","blockHash":"${hash}","blockTimestamp":"${quantity(GENESIS_TIME + 2 * n)}",` +
        `"transactionHash":"${txHash(n * 10_000 + i)}","transactionIndex":"${quantity(i)}","logIndex":"${quantity(i)}","removed":false}`,
    );
  }
  return logs;
}

/** Transaction `k` (see txHash): a token transfer carrying one ERC-8021 schema 0 suffix, as every synthetic transaction is. */
function transaction(chain: SyntheticChain, k: number): string {
  const to = (k % 9_973).toString(16).padStart(64, "0");
  return `{"hash":"${txHash(k)}","from":"0x${(k % 65_521).toString(16).padStart(40, "0")}","to":"${chain.token}","input":"0xa9059cbb${to}${hex64(k, "").slice(2)}${ATTRIBUTION_SUFFIX}","nonce":"0x0","value":"0x0","gas":"0x186a0"}`;
}

function answer(chain: SyntheticChain, method: string, params: unknown[]): string {
  const head = chain.blocks - 1;
  switch (method) {
    case "eth_chainId":
      return `"${quantity(chain.chainId)}"`;
    case "eth_blockNumber":
      return `"${quantity(head)}"`;
    case "eth_getBlockByNumber": {
      const tag = params[0] as string;
      const n = tag.startsWith("0x") ? Number(tag) : head;
      return n > head ? "null" : block(chain, n, params[1] === true);
    }
    case "eth_getTransactionByHash":
      return transaction(chain, txOfHash(params[0] as string));
    case "eth_getLogs": {
      const filter = params[0] as { fromBlock: string; toBlock: string };
      const from = Number(filter.fromBlock);
      const to = Math.min(Number(filter.toBlock), head);
      const parts: string[] = [];
      for (let n = from; n <= to; n++) parts.push(...logsOf(chain, n));
      return `[${parts.join(",")}]`;
    }
    default:
      throw new Error(`method ${method} not served`);
  }
}

/**
 * Answers rendered once, before the server listens, as bytes: each block's logs as the elements of
 * an `eth_getLogs` answer (`log,log,…`) and, with `transactions`, each of its transactions as an
 * `eth_getTransactionByHash` result. Building the text per request cost the server about 3 CPU
 * seconds a million logs (5 with the transactions), a quarter of what a 2-core machine has while the
 * indexer runs, so the figures were partly the server's. A real node runs on another machine.
 */
type Rendered = { logs: Buffer[]; transactions: Buffer[][] };

function render(chain: SyntheticChain, blocks: number, transactions: boolean): Rendered {
  const rendered: Rendered = { logs: [], transactions: [] };
  for (let n = 0; n < Math.min(blocks, chain.blocks); n++) {
    rendered.logs.push(Buffer.from(logsOf(chain, n).join(",")));
    if (transactions)
      rendered.transactions.push(
        Array.from({ length: chain.logsPerBlock }, (_, i) =>
          Buffer.from(transaction(chain, n * 10_000 + i)),
        ),
      );
  }
  return rendered;
}

type Request = { id: number; method: string; params: unknown[] };

/** The answer from the rendered bytes (copied, no text built), or undefined when a request is outside them. */
function renderedAnswer(
  chain: SyntheticChain,
  rendered: Rendered,
  requests: Request | Request[],
): Buffer | undefined {
  if (!Array.isArray(requests))
    return requests.method === "eth_getLogs" ? renderedLogs(chain, rendered, requests) : undefined;
  const parts: Buffer[] = [OPEN_ARRAY];
  for (const request of requests) {
    const result = renderedResult(rendered, request);
    if (result === undefined) return undefined;
    if (parts.length > 1) parts.push(COMMA);
    parts.push(
      Buffer.from(`{"jsonrpc":"2.0","id":${request.id},"result":`),
      ...result,
      CLOSE_OBJECT,
    );
  }
  parts.push(CLOSE_ARRAY);
  return Buffer.concat(parts);
}

/** A transaction by hash, or a whole block with its transactions, from the rendered bytes. */
function renderedResult(rendered: Rendered, request: Request): Buffer[] | undefined {
  if (request.method === "eth_getBlockByNumber" && request.params[1] === true) {
    const n = Number(request.params[0]);
    const transactions = rendered.transactions[n];
    if (transactions === undefined) return undefined;
    const parts: Buffer[] = [Buffer.from(`${headerStart(n)}[`)];
    transactions.forEach((tx, i) => parts.push(...(i === 0 ? [tx] : [COMMA, tx])));
    parts.push(CLOSE_ARRAY, CLOSE_OBJECT);
    return parts;
  }
  const k =
    request.method === "eth_getTransactionByHash"
      ? txOfHash(request.params[0] as string)
      : Number.NaN;
  const result = rendered.transactions[Math.floor(k / 10_000)]?.[k % 10_000];
  return result === undefined ? undefined : [result];
}

function renderedLogs(
  chain: SyntheticChain,
  rendered: Rendered,
  request: Request,
): Buffer | undefined {
  const filter = request.params[0] as { fromBlock: string; toBlock: string };
  const from = Number(filter.fromBlock);
  const to = Math.min(Number(filter.toBlock), chain.blocks - 1);
  if (to >= rendered.logs.length) return undefined;
  const parts: Buffer[] = [Buffer.from(`{"jsonrpc":"2.0","id":${request.id},"result":[`)];
  for (let n = from; n <= to; n++) {
    if (rendered.logs[n]!.length === 0) continue;
    if (parts.length > 1) parts.push(COMMA);
    parts.push(rendered.logs[n]!);
  }
  parts.push(CLOSE_ARRAY, CLOSE_OBJECT);
  return Buffer.concat(parts);
}
const COMMA = Buffer.from(",");
const OPEN_ARRAY = Buffer.from("[");
const CLOSE_ARRAY = Buffer.from("]");
const CLOSE_OBJECT = Buffer.from("}");

/** How much to render before listening (see Rendered): the first `blocks` blocks' logs, and their transactions too; the rest is built per request. */
export type Prerender = { blocks: number; transactions: boolean };

export async function startSyntheticRpcServer(
  chain: SyntheticChain,
  options: { port?: number; prerender?: Prerender } = {},
) {
  const rendered = render(
    chain,
    options.prerender?.blocks ?? 0,
    options.prerender?.transactions ?? false,
  );
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const requests = JSON.parse(body) as Request | Request[];
      const bytes = renderedAnswer(chain, rendered, requests);
      if (bytes !== undefined) {
        res.writeHead(200, { "content-type": "application/json" }).end(bytes);
        return;
      }
      const one = (r: Request) => {
        try {
          return `{"jsonrpc":"2.0","id":${r.id},"result":${answer(chain, r.method, r.params)}}`;
        } catch (error) {
          return `{"jsonrpc":"2.0","id":${r.id},"error":{"code":-32601,"message":${JSON.stringify((error as Error).message)}}}`;
        }
      };
      const text = Array.isArray(requests) ? `[${requests.map(one).join(",")}]` : one(requests);
      res.writeHead(200, { "content-type": "application/json" }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Starts the server as a separate process (so its work is not the measured process's) and resolves
 * with its URL and a stop function once it listens, having rendered what `prerender` asks (about
 * 640 bytes of memory a log, 350 a transaction, and a few seconds before the measurement starts).
 */
export function startSyntheticRpcProcess(
  blocks: number,
  logsPerBlock: number,
  token: string,
  prerender: Prerender = { blocks: 0, transactions: false },
): Promise<{ url: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const args = [
      join(import.meta.dirname, "syntheticRpcServer.js"),
      String(blocks),
      String(logsPerBlock),
      token,
      JSON.stringify(prerender),
    ];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    child.stdout.once("data", (chunk: Buffer) =>
      resolve({ url: chunk.toString().trim(), stop: () => child.kill() }),
    );
    child.on("error", reject);
  });
}

// Run as its own process: `node syntheticRpcServer.js <blocks> <logsPerBlock> <token> <prerender as JSON>`; prints the URL.
if (process.argv[1]?.endsWith("syntheticRpcServer.js")) {
  const [blocks, logsPerBlock, token, prerender] = process.argv.slice(2);
  const chain = {
    chainId: 8453,
    token: token!,
    blocks: Number(blocks),
    logsPerBlock: Number(logsPerBlock),
  };
  const server = await startSyntheticRpcServer(chain, {
    prerender: JSON.parse(prerender!) as Prerender,
  });
  console.log(server.url);
}
