import type pg from "pg";
import type { BlockRef } from "../store.js";

/** The SQLite store's chainEnd.ts over a Postgres connection. */
export function createPostgresChainEnd(client: pg.ClientBase, chainId: number) {
  return {
    async liveBlocksAbove(blockNumber: number): Promise<BlockRef[]> {
      const { rows } = await client.query(
        "SELECT DISTINCT block_number AS number, block_hash AS hash FROM logs WHERE block_number > $1 AND status IN ('confirmed', 'finalized') ORDER BY block_number",
        [blockNumber],
      );
      return rows.map((r: { number: string | number; hash: BlockRef["hash"] }) => ({
        number: Number(r.number),
        hash: r.hash,
      }));
    },
    /** Every token's synced ranges end at `blockNumber` at the latest. Call inside the change's transaction. */
    async cutSyncedAt(blockNumber: number): Promise<void> {
      // The lock createPostgresSyncedRanges().add takes: windows committing side by side merge ranges under it.
      await client.query(
        "SELECT pg_advisory_xact_lock(hashtext('flashindex:synced:' || current_schema()))",
      );
      await client.query("DELETE FROM synced_ranges WHERE chain_id = $1 AND from_block > $2", [
        chainId,
        blockNumber,
      ]);
      await client.query(
        "UPDATE synced_ranges SET to_block = $1 WHERE chain_id = $2 AND to_block > $1",
        [blockNumber, chainId],
      );
    },
  };
}
