import { parseRpcLog } from "../../chain/rpcLog.js";
import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { BlockRef, Store } from "../../store/store.js";

/** Blocks whose logs the node flagged removed, remembered (count per block hash) until their reorg is detected. */
const FLAGGED_BLOCKS_REMEMBERED = 256;

/**
 * Honours `removed: true` from a `logs` subscription (a real node re-sends reorged-out logs so), and
 * remembers how many logs it flagged per block until the parent-hash walk finds their reorg:
 * "Detected reorg" counts them too, so its removed_logs says what the reorg removed.
 */
export function createRemovedLogFlags(deps: {
  store: Pick<Store, "removeLog">;
  metrics: Metrics;
  logger: Logger;
}) {
  const { store, metrics, logger } = deps;
  const flaggedByNode = new Map<string, number>();
  return {
    /** Takes one `logs` notification: each log flagged removed is flagged in the store. */
    onNotification: (result: unknown): void => {
      const items = Array.isArray(result) ? result : [result];
      for (const item of items) {
        let log;
        try {
          log = parseRpcLog(item, "logs notification");
        } catch (error) {
          metrics.wsMessagesRejected.inc({ subscription: "logs" });
          logger.warn({ msg: "Rejected logs notification", error: (error as Error).message });
          continue;
        }
        if (!log.removed) continue;
        const { blockHash, logIndex } = log;
        store.removeLog(log, Date.now()).then(
          (changed) => {
            metrics.removedLogs.inc({ via: "removed_flag" }, changed);
            if (changed === 0) return;
            logger.warn({
              msg: "Flagged log removed by the node",
              block_hash: blockHash,
              log_index: logIndex,
            });
            // Counted into the "Detected reorg" line when the parent-hash walk reaches this block.
            const key = blockHash.toLowerCase();
            flaggedByNode.set(key, (flaggedByNode.get(key) ?? 0) + changed);
            if (flaggedByNode.size > FLAGGED_BLOCKS_REMEMBERED)
              flaggedByNode.delete(flaggedByNode.keys().next().value!);
          },
          (error: unknown) =>
            logger.error({
              msg: "Failed to flag a log removed by the node",
              block_hash: blockHash,
              log_index: logIndex,
              error: (error as Error).message,
            }),
        );
      }
    },
    /** How many logs the node flagged in the `orphaned` blocks; they are forgotten once counted. */
    takeFlagged(orphaned: readonly BlockRef[]): number {
      let flagged = 0;
      for (const block of orphaned) {
        flagged += flaggedByNode.get(block.hash.toLowerCase()) ?? 0;
        flaggedByNode.delete(block.hash.toLowerCase());
      }
      return flagged;
    },
  };
}

export type RemovedLogFlags = ReturnType<typeof createRemovedLogFlags>;
