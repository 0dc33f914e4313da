import type pg from "pg";
import type { Hex } from "viem";
import type { TokenCounts } from "../types.js";

/**
 * Row counts of one token by lifecycle status, for `flashindex status` (SQLite:
 * sqlite/rowsByStatus.ts).
 */
export async function countPostgresRowsByStatus(
  client: pg.ClientBase,
  chainId: number,
  token: Hex,
): Promise<TokenCounts[]> {
  const { rows } = await client.query(
    `SELECT status, SUM(is_transfer)::int AS transfers, SUM(1 - is_transfer)::int AS authorizations FROM (
       SELECT status, 1 AS is_transfer FROM transfers WHERE chain_id = $1 AND token = $2
       UNION ALL
       SELECT status, 0 FROM authorization_events WHERE chain_id = $1 AND token = $2) AS rows_by_status
     GROUP BY status ORDER BY status`,
    [chainId, token],
  );
  return rows;
}
