import type pg from "pg";
import type { Hex } from "viem";
import { LIVE_STATUS_LIST_SQL } from "../liveStatus.js";
import type { OwedBlock } from "../types.js";
import { arrayLiteral } from "./rowWriter.js";

/**
 * The blocks whose attribution a rate-limited backfill left owed (schema 14, as SQLite's
 * owedAttribution.ts): recorded with a window's rows, listed with their live transactions, cleared
 * when paid. Call the writes inside the transaction they belong to.
 */
export function createPostgresOwedBlocks(client: pg.ClientBase) {
  return {
    /** Records `owed` blocks at `now` (a block already owed stays as it was). */
    async record(owed: ReadonlyArray<readonly [number, Hex]>, now: number): Promise<void> {
      if (owed.length === 0) return;
      const rows = owed.map(([number, hash]) => [number, hash]);
      await client.query(
        `INSERT INTO attribution_owed (block_number, block_hash, owed_at)
         SELECT block_number, block_hash, $3 FROM unnest($1::bigint[], $2::text[]) AS o (block_number, block_hash)
         ON CONFLICT DO NOTHING`,
        [arrayLiteral(rows, 0), arrayLiteral(rows, 1), now],
      );
    },
    async count(): Promise<number> {
      return (await client.query("SELECT COUNT(*)::int AS n FROM attribution_owed")).rows[0]
        .n as number;
    },
    /** The `limit` lowest owed blocks with the transactions of their live logs, in one query. */
    async next(limit: number): Promise<OwedBlock[]> {
      const { rows } = await client.query(
        `SELECT o.block_number AS number, o.block_hash AS hash,
           ARRAY(SELECT DISTINCT l.tx_hash FROM logs l
                 WHERE l.block_number = o.block_number AND l.block_hash = o.block_hash AND l.status IN ${LIVE_STATUS_LIST_SQL}
                 ORDER BY l.tx_hash) AS "txHashes"
         FROM (SELECT block_number, block_hash FROM attribution_owed ORDER BY block_number, block_hash LIMIT $1) o
         ORDER BY o.block_number, o.block_hash`,
        [limit],
      );
      return rows as OwedBlock[];
    },
    async clear(blocks: ReadonlyArray<Pick<OwedBlock, "number" | "hash">>): Promise<void> {
      if (blocks.length === 0) return;
      const rows = blocks.map((b) => [b.number, b.hash]);
      await client.query(
        `DELETE FROM attribution_owed o USING unnest($1::bigint[], $2::text[]) AS b (block_number, block_hash)
         WHERE o.block_number = b.block_number AND o.block_hash = b.block_hash`,
        [arrayLiteral(rows, 0), arrayLiteral(rows, 1)],
      );
    },
  };
}
