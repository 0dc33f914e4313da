import type { Database } from "better-sqlite3";
import type { Hex } from "viem";
import { LIVE_STATUS_LIST_SQL } from "../liveStatus.js";
import type { OwedBlock } from "../types.js";

/**
 * The blocks whose attribution a rate-limited backfill left owed (schema 14, schemaV14.ts): recorded
 * with a window's rows, listed with their live transactions, cleared when paid. Call the writes
 * inside the transaction they belong to.
 */
export function createSqliteOwedBlocks(db: Database) {
  const insert = db.prepare(
    "INSERT INTO attribution_owed (block_number, block_hash, owed_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
  );
  const remove = db.prepare(
    "DELETE FROM attribution_owed WHERE block_number = ? AND block_hash = ?",
  );
  const count = db.prepare("SELECT COUNT(*) FROM attribution_owed").pluck();
  const lowest = db.prepare(
    "SELECT block_number AS number, block_hash AS hash FROM attribution_owed ORDER BY block_number, block_hash LIMIT ?",
  );
  // The unique key of `logs` leads with the block number: one range of it per block.
  const transactions = db
    .prepare(
      `SELECT DISTINCT tx_hash FROM logs WHERE block_number = ? AND block_hash = ? AND status IN ${LIVE_STATUS_LIST_SQL} ORDER BY tx_hash`,
    )
    .pluck();
  return {
    /** Records `owed` blocks at `now` (a block already owed stays as it was). */
    record(owed: ReadonlyArray<readonly [number, Hex]>, now: number): void {
      for (const [number, hash] of owed) insert.run(number, hash, now);
    },
    count: (): number => count.get() as number,
    next(limit: number): OwedBlock[] {
      return (lowest.all(limit) as Array<{ number: number; hash: Hex }>).map((block) => ({
        ...block,
        txHashes: transactions.all(block.number, block.hash) as Hex[],
      }));
    },
    clear(blocks: ReadonlyArray<Pick<OwedBlock, "number" | "hash">>): void {
      for (const block of blocks) remove.run(block.number, block.hash);
    },
  };
}
