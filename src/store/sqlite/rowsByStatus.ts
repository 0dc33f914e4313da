import type { Hex } from "viem";
import type { TokenCounts } from "../types.js";
import type { StatementCache } from "./statementCache.js";

/**
 * Row counts of one token by lifecycle status, for `flashindex status` (Postgres:
 * postgres/rowsByStatus.ts).
 */
export function countSqliteRowsByStatus(
  statements: StatementCache,
  chainId: number,
  token: Hex,
): TokenCounts[] {
  return statements
    .prepare(
      `SELECT status, SUM(is_transfer) AS transfers, SUM(1 - is_transfer) AS authorizations FROM (
         SELECT status, 1 AS is_transfer FROM transfers WHERE chain_id = ? AND token = ?
         UNION ALL
         SELECT status, 0 FROM authorization_events WHERE chain_id = ? AND token = ?)
       GROUP BY status ORDER BY status`,
    )
    .all(chainId, token, chainId, token) as TokenCounts[];
}
