import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type Address } from "viem";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { runCliBackfill, type ProcessFigures } from "./cliBackfill.js";
import { startProviderProxy, type ProviderCounts } from "./providerProxy.js";
import { startSavedAnvilChain, type SavedChain } from "./savedAnvilChain.js";

/** Addresses a merchant watches in the bench's watch-list row. */
export const WATCHED_ADDRESSES = 10;

/** One backfill of the watch-list comparison: the process's figures and what the provider served. */
export type WatchRun = ProcessFigures & { provider: ProviderCounts };

/**
 * `flashindex backfill` with the user's defaults through the provider-shaped proxy
 * (providerProxy.ts), on the saved anvil chain of `logs` logs, twice: the whole token, then with
 * `watch.addresses` set to WATCHED_ADDRESSES recipients spread over the chain (docs/watch.md).
 * Compares what each cost: time, requests and bytes downloaded.
 */
export async function watchBackfill(
  logs: number,
): Promise<{ name: string; whole: WatchRun; watched: WatchRun }> {
  const chain = await startSavedAnvilChain(logs, "dense");
  try {
    const watch = await spreadRecipients(chain, WATCHED_ADDRESSES);
    const whole = await runThroughProvider(chain, undefined);
    const watched = await runThroughProvider(chain, watch);
    return {
      name: `anvil saved dense chain of ${logs.toLocaleString("en-US")} logs through the provider-shaped proxy, defaults`,
      whole,
      watched,
    };
  } finally {
    await chain.anvil.stop();
  }
}

/** The receiver of the first payment (not a mint) at or after each of `count` blocks spread evenly over the chain. */
async function spreadRecipients(chain: SavedChain, count: number): Promise<Address[]> {
  const client = createPublicClient({ transport: http(chain.anvil.httpUrl) });
  const found = new Set<Address>();
  for (let i = 0; i < count; i++) {
    for (
      let block = chain.deployBlock + Math.floor((i * (chain.head - chain.deployBlock)) / count);
      block <= chain.head;
      block++
    ) {
      const at = `0x${block.toString(16)}`;
      const logs = (await client.request({
        method: "eth_getLogs",
        params: [{ fromBlock: at, toBlock: at, address: chain.token, topics: [TRANSFER_TOPIC] }],
      } as never)) as Array<{ topics: string[] }>;
      // A mint's receiver (the chain's payer) would watch every payment.
      const to = logs.find((log) => BigInt(log.topics[1]!) !== 0n)?.topics[2];
      if (to === undefined || found.has(`0x${to.slice(26)}` as Address)) continue;
      found.add(`0x${to.slice(26)}` as Address);
      break;
    }
  }
  if (found.size < count)
    throw new Error(`found ${found.size} distinct recipients on the saved chain, wanted ${count}`);
  return [...found];
}

async function runThroughProvider(
  chain: SavedChain,
  watch: readonly Address[] | undefined,
): Promise<WatchRun> {
  const proxy = await startProviderProxy(chain.anvil.httpUrl);
  const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
  try {
    const figures = await runCliBackfill(
      dir,
      {
        chainId: 8453,
        rpc: { http: [proxy.url] },
        tokens: [
          {
            address: chain.token,
            startBlock: chain.deployBlock,
            ...(watch === undefined ? {} : { watch: { addresses: watch } }),
          },
        ],
        finality: { depth: 0 },
        database: { path: join(dir, "watch.db") },
        metrics: { enabled: false },
        logLevel: "warn",
      },
      { from: chain.deployBlock, to: chain.head },
    );
    return { ...figures, provider: { ...proxy.counts } };
  } finally {
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The row's comparison as one cell: the watched run against the whole one. */
export function watchSummary({ whole, watched }: { whole: WatchRun; watched: WatchRun }): string {
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(2);
  const ratio = (a: number, b: number) => `${((100 * a) / Math.max(1, b)).toFixed(1)}%`;
  return (
    `${WATCHED_ADDRESSES} watched addresses: ${watched.logs} logs stored, ${(watched.durationMs / 1_000).toFixed(1)} s, ${watched.provider.calls} calls, ${mb(watched.provider.bytesServed)} MB; ` +
    `whole token: ${whole.logs} logs, ${(whole.durationMs / 1_000).toFixed(1)} s, ${whole.provider.calls} calls, ${mb(whole.provider.bytesServed)} MB ` +
    `(watched: ${ratio(watched.durationMs, whole.durationMs)} of the time, ${ratio(watched.provider.calls, whole.provider.calls)} of the calls, ${ratio(watched.provider.bytesServed, whole.provider.bytesServed)} of the bytes)`
  );
}
