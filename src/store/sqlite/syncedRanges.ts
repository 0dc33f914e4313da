import type { Database } from "better-sqlite3";
import type { Hex } from "viem";
import { contiguousEnd, mergeRanges, type BlockRange } from "../../blockRanges.js";

/**
 * Block ranges fully indexed per token. Ranges are merged on write, so the table stays a handful of
 * rows however windows finish; the contiguous prefix from a token's start block is its checkpoint.
 */
export function createSqliteSyncedRanges(db: Database, chainId: number) {
  const select = db.prepare(
    'SELECT from_block AS "from", to_block AS "to" FROM synced_ranges WHERE chain_id = ? AND token = ? ORDER BY from_block',
  );
  const remove = db.prepare(
    "DELETE FROM synced_ranges WHERE chain_id = ? AND token = ? AND from_block <= ? AND to_block >= ?",
  );
  const insert = db.prepare(
    "INSERT INTO synced_ranges (chain_id, token, from_block, to_block) VALUES (?, ?, ?, ?)",
  );

  function list(token: Hex): BlockRange[] {
    return select.all(chainId, token) as BlockRange[];
  }

  return {
    list,
    /** The last block indexed without a gap from `startBlock` (startBlock - 1 when none is). */
    checkpoint: (token: Hex, startBlock: number): number => contiguousEnd(list(token), startBlock),
    /** Records [from, to] as indexed for `token`, merging with neighbours. Call inside the window's transaction. */
    add(token: Hex, range: BlockRange): void {
      // Only ranges touching or overlapping the new one can merge with it.
      const touching = list(token).filter((r) => r.from <= range.to + 1 && r.to + 1 >= range.from);
      const [merged] = mergeRanges([...touching, range]);
      remove.run(chainId, token, merged!.to + 1, merged!.from - 1);
      insert.run(chainId, token, merged!.from, merged!.to);
    },
  };
}

export type SyncedRanges = ReturnType<typeof createSqliteSyncedRanges>;
