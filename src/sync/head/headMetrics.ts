import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import { countIndexed } from "../../store/insertCounts.js";
import type { BlockRef } from "../../store/store.js";
import type { BlockApplied } from "../../store/types.js";

/** What one head's blocks did in sum; each block's lead times and newly indexed events go to the metrics. */
export function tallyAppliedBlocks(
  metrics: Metrics,
  blocks: readonly BlockApplied[],
): { promoted: number; inserted: number; dropped: number } {
  const applied = { promoted: 0, inserted: 0, dropped: 0 };
  for (const result of blocks) {
    applied.promoted += result.promoted;
    applied.inserted += result.inserted;
    applied.dropped += result.dropped;
    for (const ms of result.leadTimesMs) metrics.preconfirmationLeadTime.observe(ms / 1_000);
    countIndexed(metrics, result.byEvent);
  }
  return applied;
}

/**
 * Records a reorg the parent-hash walk found: its metrics and one "Detected reorg" line, whose
 * removed_logs counts the logs the node had flagged removed in the orphaned blocks (`flagged`) too.
 */
export function reportReorg(
  deps: { metrics: Metrics; logger: Logger },
  reorg: {
    orphaned: readonly BlockRef[];
    ancestor: number;
    newHead: number;
    removed: number;
    flagged: number;
  },
): void {
  const { metrics, logger } = deps;
  const { orphaned, removed, flagged } = reorg;
  metrics.reorgs.inc();
  metrics.reorgDepth.observe(orphaned.length);
  metrics.removedLogs.inc({ via: "parent_hash" }, removed);
  logger.warn({
    msg: "Detected reorg",
    depth: orphaned.length,
    common_ancestor: reorg.ancestor,
    new_head: reorg.newHead,
    removed_logs: removed + flagged,
    removed_by_node_flag: flagged,
  });
}
