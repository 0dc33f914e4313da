import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCliBackfill, type ProcessFigures } from "./cliBackfill.js";
import { startSavedAnvilChain } from "./savedAnvilChain.js";

/**
 * End to end: `flashindex backfill` (a fresh process, as a user starts it) against anvil serving a
 * saved chain of `logs` Transfer logs (500 per block), windowBlocks 1,000 and concurrency 4.
 */
export async function anvilEndToEnd(logs: number): Promise<ProcessFigures & { name: string }> {
  const chain = await startSavedAnvilChain(logs, "dense");
  const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
  try {
    const figures = await runCliBackfill(
      dir,
      {
        chainId: 8453,
        attribution: { enabled: false },
        rpc: { http: [chain.anvil.httpUrl], requestsPerSecond: 10_000, timeoutMs: 120_000 },
        tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
        backfill: { windowBlocks: 1_000, concurrency: 4 },
        finality: { depth: 0 },
        database: { path: join(dir, "anvil.db") },
        metrics: { enabled: false },
        logLevel: "warn",
      },
      { from: chain.deployBlock, to: chain.head },
    );
    return { name: `anvil end to end, ${logs.toLocaleString("en-US")} Transfer logs (saved chain, 500 a block)`, ...figures };
  } finally {
    await chain.anvil.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
