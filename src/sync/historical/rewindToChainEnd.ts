import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { Config } from "../../config/types.js";
import type { Store } from "../../store/store.js";
import { memberRanges, membersOf } from "../watchScope.js";

export type ChainEndDeps = {
  config: Pick<Config, "tokens">;
  logger: Logger;
  metrics: Metrics;
  store: Store;
};

/**
 * Brings the store in line with a chain that ends at `head`, below blocks the store indexed (a
 * devnet restored from a chain saved before its last blocks): a reorg to `head`, seen from the
 * indexer. The live rows above it are flagged removed, as for any reorg (their webhooks and order
 * states follow), and the synced ranges end at `head`, so the heights above are indexed again as the
 * chain makes them. Does nothing when the store holds nothing above `head`. Returns the rows flagged.
 */
export async function rewindToChainEnd(deps: ChainEndDeps, head: number): Promise<number> {
  const { store, metrics } = deps;
  const orphaned = await store.liveBlocksAbove(head);
  const members = deps.config.tokens.flatMap(membersOf);
  const syncedTo = await Promise.all(
    members.map(async (member) =>
      Math.max(-1, ...(await memberRanges(store, member)).map((r) => r.to)),
    ),
  );
  const indexedTo = Math.max(-1, ...syncedTo, ...orphaned.map((b) => b.number));
  if (indexedTo <= head) return 0;
  const { removed } = await store.applyChainChange(
    { kind: "reorg", orphaned, blocks: [], synced: [], endsAt: head },
    Date.now(),
  );
  metrics.reorgs.inc();
  metrics.reorgDepth.observe(indexedTo - head);
  metrics.removedLogs.inc({ via: "restart_check" }, removed);
  deps.logger.warn({
    msg: "Flagged removed the rows above the chain's end",
    chain_head: head,
    indexed_to_block: indexedTo,
    removed_logs: removed,
    blocks_with_logs: orphaned.length,
  });
  return removed;
}
