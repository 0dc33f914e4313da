import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeFunctionData, numberToHex, type Address, type Hex } from "viem";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { CHAIN_SEED, planChain, type ChainShape, type PlannedTransfer } from "./chainShapes.js";

export { CHAIN_SHAPES, type ChainShape } from "./chainShapes.js";

/** A fixed genesis timestamp: block 0 (and so every hash after it) is the same on every load. */
const GENESIS_TIMESTAMP = "1700000000";
/** Where saved chains live: `.bench/` beside the checkout, or BENCH_CHAIN_DIR (to try a chain without touching the shared ones). */
const CACHE_DIR =
  process.env.BENCH_CHAIN_DIR ?? join(import.meta.dirname, "..", "..", "..", ".bench");
/** A base-mix chain's dump runs to gigabytes: anvil takes minutes to load it on a busy host. */
const LOAD_TIMEOUT_MS = 600_000;
/**
 * The senders of the planned transactions (token transactions, then the others), impersonated: anvil
 * recovers a signed transaction's sender with k256 each time it serves it, whole block or by hash,
 * a cost no production node pays on every read (reth stores senders), which made an attributed
 * backfill of the base-mix chain measure anvil's ECDSA rather than the indexer
 * (`anvil-ecdsa-per-served-tx` in results/measurements.csv). An impersonated transaction's sender
 * is stored with it.
 */
const SENDERS = [
  "0x00000000000000000000000000000000000a11ce",
  "0x0000000000000000000000000000000000000b0b",
] as const;
/** Gas limits given with each transaction, so anvil estimates nothing: room for the largest of each kind. */
const GAS = { dense: 6_000_000, mixToken: 300_000, other: 60_000 } as const;

export type SavedChainMeta = {
  shape: ChainShape;
  seed: number;
  token: Address;
  deployBlock: number;
  head: number;
  logs: number;
  /** Token transactions and transactions that touch no token. */
  tokenTransactions: number;
  otherTransactions: number;
};
export type SavedChain = SavedChainMeta & { anvil: Anvil };

/**
 * Where a saved chain lives: anvil's state dump and what the generator recorded about it. The name
 * says the senders are impersonated (SENDERS): chains saved before, with signed senders, keep
 * theirs, for a checkout that still reads them.
 */
export function savedChainPaths(shape: ChainShape, logs: number): { state: string; meta: string } {
  const base = join(CACHE_DIR, `anvil-${shape}-${logs}-impersonated`);
  return { state: `${base}.state.json`, meta: `${base}.meta.json` };
}

/**
 * An anvil serving a chain of exactly `logs` Transfer logs of the test token in the given shape
 * (chainShapes.ts), identical on every run: planned from a fixed seed, generated once, saved with
 * anvil's own state dump under `.bench/`, and loaded from it afterwards, so runs compare the same
 * blocks and hashes.
 */
export async function startSavedAnvilChain(logs: number, shape: ChainShape): Promise<SavedChain> {
  mkdirSync(CACHE_DIR, { recursive: true });
  const paths = savedChainPaths(shape, logs);
  if (!existsSync(paths.state) || !existsSync(paths.meta)) await generate(shape, logs, paths);
  const meta = JSON.parse(readFileSync(paths.meta, "utf8")) as SavedChainMeta;
  const anvil = await startAnvil({
    chainId: 8453,
    extraArgs: ["--timestamp", GENESIS_TIMESTAMP, "--load-state", paths.state],
    startupTimeoutMs: LOAD_TIMEOUT_MS,
  });
  const head = Number(await rpc<Hex>(anvil.httpUrl, "eth_blockNumber", []));
  if (head < meta.head) {
    await anvil.stop();
    throw new Error(
      `${paths.state} loaded to block ${head}, expected ${meta.head}: delete ${paths.meta} to generate it again`,
    );
  }
  return { anvil, ...meta };
}

async function generate(
  shape: ChainShape,
  logs: number,
  paths: { state: string; meta: string },
): Promise<void> {
  process.stderr.write(
    `generating a ${shape} anvil chain of ${logs} Transfer logs (once; saved to ${paths.state})\n`,
  );
  const partial = `${paths.state}.partial`;
  // --prune-history: no per-block state snapshots (a 1,000,000-log chain otherwise holds over 12 GB);
  // a long --state-interval: the state is written once, on exit, not every few seconds while sending.
  const anvil = await startAnvil({
    chainId: 8453,
    extraArgs: [
      "--timestamp",
      GENESIS_TIMESTAMP,
      "--dump-state",
      partial,
      "--state-interval",
      "86400",
      "--prune-history",
    ],
  });
  try {
    const { address: token, blockNumber: deployBlock } = await deployTestToken({
      rpcUrl: anvil.httpUrl,
      privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
    });
    const [tokenSender, otherSender] = SENDERS;
    for (const sender of SENDERS) {
      await rpc(anvil.httpUrl, "anvil_setBalance", [sender, "0xffffffffffffffffffffffffffffffff"]);
      await rpc(anvil.httpUrl, "anvil_impersonateAccount", [sender]);
    }
    // From here each planned block is sent whole, then mined: its transactions share the block.
    await rpc(anvil.httpUrl, "evm_setAutomine", [false]);
    const counts = { logs: 0, tokenTransactions: 0, otherTransactions: 0, blocks: 0 };
    for (const block of planChain(shape, logs)) {
      const sends = [
        ...block.tokenTxs.map((transfers) => ({
          from: tokenSender,
          to: token,
          gas: numberToHex(shape === "dense" ? GAS.dense : GAS.mixToken),
          data: emitCalldata(transfers),
        })),
        ...block.otherTxs.map((data, i) => ({
          from: otherSender,
          to: numberToHex(0xb0000 + i, { size: 20 }),
          gas: numberToHex(GAS.other),
          data,
        })),
      ];
      await rpcBatch(
        anvil.httpUrl,
        sends.map((tx) => ({ method: "eth_sendTransaction", params: [tx] })),
      );
      await rpc(anvil.httpUrl, "evm_mine", []);
      counts.blocks++;
      counts.tokenTransactions += block.tokenTxs.length;
      counts.otherTransactions += block.otherTxs.length;
      counts.logs += block.tokenTxs.reduce((sum, tx) => sum + tx.length, 0);
      if (counts.blocks % 1_000 === 0)
        process.stderr.write(`  ${counts.logs} logs in ${counts.blocks} blocks\n`);
    }
    const head = Number(await rpc<Hex>(anvil.httpUrl, "eth_blockNumber", []));
    // Every planned block mined as one block (none left pending, none split).
    if (head !== deployBlock + counts.blocks)
      throw new Error(
        `generated ${head - deployBlock} blocks after the token, planned ${counts.blocks}`,
      );
    const meta: SavedChainMeta = {
      shape,
      seed: CHAIN_SEED,
      token,
      deployBlock,
      head,
      logs: counts.logs,
      tokenTransactions: counts.tokenTransactions,
      otherTransactions: counts.otherTransactions,
    };
    // SIGTERM: anvil writes --dump-state on its way out, which takes a while for a large chain:
    // wait for it rather than let stop()'s grace period cut the file short.
    const exited = new Promise((resolve) => anvil.process.once("exit", resolve));
    anvil.process.kill("SIGTERM");
    await exited;
    // Only a whole dump gets the name a later run loads.
    renameSync(partial, paths.state);
    writeFileSync(paths.meta, JSON.stringify(meta));
  } finally {
    await anvil.stop();
  }
}

function emitCalldata(transfers: PlannedTransfer[]): Hex {
  return encodeFunctionData({
    abi: flashTestTokenAbi,
    functionName: "emitTransferEvents",
    args: [transfers.map((t) => t.from), transfers.map((t) => t.to), transfers.map((t) => t.value)],
  });
}

type RpcAnswer = { id: number; result?: unknown; error?: { code: number; message: string } };

async function rpcBatch(
  url: string,
  calls: Array<{ method: string; params: unknown[] }>,
): Promise<unknown[]> {
  if (calls.length === 0) return [];
  const body = calls.map((call, id) => ({ jsonrpc: "2.0", id, ...call }));
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answers = (await response.json()) as RpcAnswer[];
  const byId = new Map(answers.map((answer) => [answer.id, answer]));
  return calls.map((call, id) => {
    const answer = byId.get(id);
    if (answer === undefined || answer.error !== undefined)
      throw new Error(
        `${call.method} failed while generating the chain: ${JSON.stringify(answer?.error ?? "no answer")}`,
      );
    return answer.result;
  });
}

async function rpc<T = unknown>(url: string, method: string, params: unknown[]): Promise<T> {
  return (await rpcBatch(url, [{ method, params }]))[0] as T;
}
