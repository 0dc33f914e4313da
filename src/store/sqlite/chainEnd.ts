import type { Database } from "better-sqlite3";
import type { BlockRef } from "../store.js";

/**
 * A chain that ends below what the database indexed (a devnet restored from a chain saved before
 * its last blocks, store.ts `ChainChange.endsAt`): the blocks above its end that hold live rows, and
 * the synced ranges cut at its end. Live rows are flagged removed by the lifecycle, as for any reorg.
 */
export function createSqliteChainEnd(db: Database, chainId: number) {
  // No index on block_number alone covers finalized rows: a scan, once per devnet restart.
  const liveAbove = db.prepare(`
    SELECT DISTINCT block_number AS number, block_hash AS hash FROM logs
    WHERE block_number > ? AND status IN ('confirmed', 'finalized') ORDER BY block_number`);
  const dropAbove = db.prepare("DELETE FROM synced_ranges WHERE chain_id = ? AND from_block > ?");
  const cutAt = db.prepare(
    "UPDATE synced_ranges SET to_block = ? WHERE chain_id = ? AND to_block > ?",
  );
  return {
    liveBlocksAbove: (blockNumber: number): BlockRef[] => liveAbove.all(blockNumber) as BlockRef[],
    /** Every token's synced ranges end at `blockNumber` at the latest. Call inside the change's transaction. */
    cutSyncedAt(blockNumber: number): void {
      dropAbove.run(chainId, blockNumber);
      cutAt.run(blockNumber, chainId, blockNumber);
    },
  };
}
