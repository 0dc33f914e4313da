import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS } from "../../src/config/types.js";
import { runCliBackfill, type ProcessFigures } from "./cliBackfill.js";
import { startSavedAnvilChain, type ChainShape, type SavedChain, type SavedChainMeta } from "./savedAnvilChain.js";

/**
 * End to end: `flashindex backfill` (a fresh process, as a user starts it) against anvil serving a
 * saved chain of `logs` Transfer logs in the given shape, with the configuration a user gets: every
 * default (attribution on, the default rate limit, windows and concurrency, log level) but for the
 * node's URL, the token, the database file, finality at the head (the bench reads to its last block)
 * and metrics off (no port to share). `attribution: false` turns attribution off and nothing else.
 */
export async function anvilEndToEnd(logs: number, shape: ChainShape, attribution: boolean): Promise<ProcessFigures & { name: string }> {
  const chain = await startSavedAnvilChain(logs, shape);
  const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
  try {
    const figures = await runCliBackfill(dir, anvilBackfillConfig(chain, dir, attribution), { from: chain.deployBlock, to: chain.head });
    return { name: `anvil end to end, ${describeChain(chain)}; ${describeConfig(attribution)}`, ...figures };
  } finally {
    await chain.anvil.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The configuration of an end-to-end backfill against a saved chain: the defaults, but what anvilEndToEnd says, with the database in `dir`. */
export function anvilBackfillConfig(chain: SavedChain, dir: string, attribution: boolean): Record<string, unknown> {
  return {
    chainId: 8453,
    ...(attribution ? {} : { attribution: { enabled: false } }),
    rpc: { http: [chain.anvil.httpUrl] },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    finality: { depth: 0 },
    database: { path: join(dir, "anvil.db") },
    metrics: { enabled: false },
  };
}

/** A saved chain as a row names it: size, shape, blocks and transactions. */
export function describeChain(chain: SavedChainMeta): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const blocks = chain.head - chain.deployBlock;
  const others = chain.otherTransactions === 0 ? "" : ` and ${n(chain.otherTransactions)} others`;
  return `${n(chain.logs)} Transfer logs (saved ${chain.shape} chain: ${n(blocks)} blocks, ${n(chain.tokenTransactions)} token transactions${others})`;
}

/** The configuration a row ran with: the defaults, with attribution on or off. */
export function describeConfig(attribution: boolean): string {
  const { requestsPerSecond } = DEFAULTS.rpc;
  const rate = requestsPerSecond === undefined ? "no request-rate ceiling until a provider refuses" : `${requestsPerSecond} requests/s`;
  const { windowBlocks, concurrency } = DEFAULTS.backfill;
  return `defaults (${rate}, windowBlocks ${windowBlocks}, concurrency ${concurrency}, log level ${DEFAULTS.logLevel}), attribution ${attribution ? "on" : "off"}`;
}
