import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/**
 * A JSON-RPC server that serves a large, deterministic set of Transfer logs (`logsPerBlock` in each
 * of `blocks` blocks) so a benchmark measures the indexer, not the node. Answers are built as
 * strings straight from the block number: no per-log objects, no JSON.stringify.
 */
export type SyntheticChain = { chainId: number; token: string; blocks: number; logsPerBlock: number };

const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const hex64 = (n: number, salt: string) => `0x${salt}${n.toString(16).padStart(64 - salt.length, "0")}`;
const quantity = (n: number) => `0x${n.toString(16)}`;
const GENESIS_TIME = 1_700_000_000;
/** Schema 0, code "bc_b8nos5a8" (protocol-notes §3). */
const ATTRIBUTION_SUFFIX = "62635f62386e6f733561380b0080218021802180218021802180218021";

/**
 * Transaction `k`'s hash: 8 scattered hex digits, then k. Real hashes are random, and where a
 * random key lands in a b-tree is what storing one costs: sequential hashes would flatter the
 * attribution tables (keyed by hash). The tail still tells the server which transaction is asked for.
 */
const txHash = (k: number) => `0x${(Math.imul(k, 0x9e3779b1) >>> 0).toString(16).padStart(8, "0")}${k.toString(16).padStart(56, "0")}`;
const txOfHash = (hash: string) => Number.parseInt(hash.slice(10), 16);

function blockHash(n: number): string {
  return hex64(n, "b1");
}

function header(n: number): string {
  return `{"number":"${quantity(n)}","hash":"${blockHash(n)}","parentHash":"${n === 0 ? hex64(0, "00") : blockHash(n - 1)}","timestamp":"${quantity(GENESIS_TIME + 2 * n)}","transactions":[]}`;
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
      return n > head ? "null" : header(n);
    }
    case "eth_getTransactionByHash": {
      // Every synthetic transaction is a token transfer carrying one ERC-8021 schema 0 suffix.
      const hash = params[0] as string;
      const n = txOfHash(hash);
      const to = (n % 9_973).toString(16).padStart(64, "0");
      return `{"hash":"${hash}","from":"0x${(n % 65_521).toString(16).padStart(40, "0")}","to":"${chain.token}","input":"0xa9059cbb${to}${hex64(n, "").slice(2)}${ATTRIBUTION_SUFFIX}","nonce":"0x0","value":"0x0","gas":"0x186a0"}`;
    }
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

export async function startSyntheticRpcServer(chain: SyntheticChain, port = 0) {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const requests = JSON.parse(body) as { id: number; method: string; params: unknown[] } | Array<{ id: number; method: string; params: unknown[] }>;
      const one = (r: { id: number; method: string; params: unknown[] }) => {
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
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${address.port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * Starts the server as a separate process (so its work is not the measured process's) and resolves
 * with its URL and a stop function.
 */
export function startSyntheticRpcProcess(blocks: number, logsPerBlock: number, token: string): Promise<{ url: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(import.meta.dirname, "syntheticRpcServer.js"), String(blocks), String(logsPerBlock), token], { stdio: ["ignore", "pipe", "inherit"] });
    child.stdout.once("data", (chunk: Buffer) => resolve({ url: chunk.toString().trim(), stop: () => child.kill() }));
    child.on("error", reject);
  });
}

// Run as its own process: `node syntheticRpcServer.js <blocks> <logsPerBlock> <token>`; prints the URL.
if (process.argv[1]?.endsWith("syntheticRpcServer.js")) {
  const [blocks, logsPerBlock, token] = process.argv.slice(2);
  const server = await startSyntheticRpcServer({ chainId: 8453, token: token!, blocks: Number(blocks), logsPerBlock: Number(logsPerBlock) });
  console.log(server.url);
}
