import type { RpcClient } from "../chain/rpcClient.js";
import type { Common } from "../common.js";
import { NUMBER_AT, NUMBER_FIELDS } from "../rows/packedRows.js";
import { createWindowDecoder } from "../sync/historical/windowDecoder.js";
import { ShutdownError } from "../errors/base.js";
import { sleep } from "../ops/shutdown.js";
import type { ProcessMode } from "../ops/threadSettings.js";
import type { Store } from "../store/store.js";
import type { OwedBlock } from "../store/types.js";
import type { Attributor, WindowTransactions } from "./attributeLogs.js";

/**
 * Owed blocks paid in one store transaction. At a provider's 5 calls a second that is two seconds of
 * calls: a crash costs at most that again, and a store transaction every two seconds costs nothing.
 */
export const OWED_BLOCKS_PER_PAYMENT = 10;
/** How often the daemon looks for owed blocks while none are left. */
export const TRAILING_IDLE_POLL_MS = 5_000;
/** Pause after a failed payment (retries spent, the store refused) before the daemon tries again. */
export const TRAILING_RETRY_MS = 10_000;
/** How often a long catch-up reports progress at info level. */
const PROGRESS_INTERVAL_MS = 5_000;

export type TrailingDeps = Pick<Common, "logger" | "metrics" | "shutdown" | "client"> & {
  store: Pick<Store, "owedAttribution">;
  attributor: Attributor;
};

/**
 * The trailing stage: attribution of the blocks a rate-limited backfill stored without reading
 * their calldata (sync/historical/syncHistorical.ts; schema 14). It reads the owed blocks in order, at most one
 * calldata call per block (attributeWindow, as a window's), and stores their attribution and
 * clears them in one transaction: a crash leaves them owed, a restart pays them, nothing is stored
 * twice. A block reorged meanwhile has no live logs left: it is cleared without a call, never
 * attributed from the block now at its height (a whole block is read only by the hash its logs carried).
 *
 * `mode` "daemon": live work shares the client, so while the provider limits the rate each request
 * carries one call and only one is in flight: the head and the pending view keep most of the rate.
 */
export function createTrailingAttribution(deps: TrailingDeps, options: { mode: ProcessMode }) {
  const { store, attributor, metrics, shutdown } = deps;
  const logger = deps.logger.child({ component: "trailing_attribution" });
  // Owed attribution can always wait: its requests borrow what live work leaves.
  const background = deps.client.background();
  const client: RpcClient =
    options.mode === "daemon"
      ? {
          ...background,
          batchCalls: () => (background.rateLimited() ? 1 : background.batchCalls()),
        }
      : background;
  // Calldata answers are attributed on this thread (attribute() never starts the decode thread).
  const decoder = createWindowDecoder({
    threadAfterLogs: Number.POSITIVE_INFINITY,
    mode: options.mode,
  });

  /** Pays the next owed blocks; returns how many (0: none owed). */
  async function payNext(): Promise<number> {
    const owed = await store.owedAttribution.next(OWED_BLOCKS_PER_PAYMENT);
    if (owed.length === 0) return 0;
    shutdown.throwIfKilled();
    const attribution = await attributor.attributeWindow(client, decoder, owedTransactions(owed));
    await store.owedAttribution.pay(owed, attribution);
    const reorged = owed.filter((block) => block.txHashes.length === 0);
    if (reorged.length > 0)
      logger.info({
        msg: "Dropped owed attribution of reorged blocks",
        blocks: reorged.map((b) => b.number),
      });
    metrics.attributionOwedBlocks.set(await store.owedAttribution.count());
    return owed.length;
  }

  /**
   * Pays every owed block, then returns how many it paid and how long it took (ms). Throws what
   * attribution throws (the RPC's retries spent): what is paid stays paid, the rest stays owed.
   */
  async function payAll(): Promise<{ blocks: number; durationMs: number }> {
    const started = Date.now();
    const owedAtStart = await store.owedAttribution.count();
    metrics.attributionOwedBlocks.set(owedAtStart);
    let blocks = 0;
    let reported = started;
    for (;;) {
      const paid = await payNext();
      if (paid === 0) break;
      blocks += paid;
      if (Date.now() - reported >= PROGRESS_INTERVAL_MS) {
        reported = Date.now();
        logger.info({
          msg: "Attribution progressed",
          blocks_paid: blocks,
          blocks_owed: Math.max(0, owedAtStart - blocks),
        });
      }
    }
    const durationMs = Date.now() - started;
    if (blocks > 0)
      logger.info({ msg: "Caught up with owed attribution", blocks, duration_ms: durationMs });
    return { blocks, durationMs };
  }

  return {
    payAll,
    /**
     * The daemon's: pays owed blocks as backfills leave them, until shutdown. A failure is logged and
     * tried again after TRAILING_RETRY_MS (the blocks stay owed meanwhile); never throws but ShutdownError's way out.
     */
    async runForever(): Promise<void> {
      try {
        for (;;) {
          let wait = TRAILING_IDLE_POLL_MS;
          try {
            const { blocks } = await payAll();
            if (blocks > 0) continue;
          } catch (error) {
            if (error instanceof ShutdownError || shutdown.isKilled()) return;
            logger.warn({
              msg: "Failed to pay owed attribution, retrying later",
              retry_in_ms: TRAILING_RETRY_MS,
              error: (error as Error).message,
            });
            wait = TRAILING_RETRY_MS;
          }
          await sleep(wait, shutdown.signal);
        }
      } catch (error) {
        if (!(error instanceof ShutdownError)) throw error;
      } finally {
        await decoder.close();
      }
    },
    close: () => decoder.close(),
  };
}

/** Owed blocks as attributeWindow takes a window's transactions: each transaction with its block's number, and each block's hash. */
export function owedTransactions(owed: readonly OwedBlock[]): WindowTransactions {
  const txHashes = owed.flatMap((block) => block.txHashes);
  const numbers = new Float64Array(txHashes.length * NUMBER_FIELDS);
  let row = 0;
  for (const block of owed)
    for (let i = 0; i < block.txHashes.length; i++)
      numbers[row++ * NUMBER_FIELDS + NUMBER_AT.blockNumber] = block.number;
  return {
    rows: { numbers },
    txHashes,
    blocks: owed.map((block) => [block.number, block.hash] as const),
  };
}
