import type { Database } from "better-sqlite3";
import type { SqliteOrders } from "./orders.js";
import { createStatementCache } from "./statementCache.js";
import {
  toSettlement,
  type Settlement,
  type SettlementRow,
  type SettlementStore,
} from "../settlementStore.js";

/**
 * The x402 facilitator's settle claims over one SQLite connection (schema 16). `write` runs its
 * work in one `BEGIN IMMEDIATE` transaction: two processes claiming one order are serialised on
 * the database's write lock, and the second reads the first one's claim. `orders`: the
 * connection's.
 */
export function createSqliteSettlements(
  db: Database,
  orders: SqliteOrders,
  write: <T>(work: () => T) => Promise<T>,
): SettlementStore {
  const statements = createStatementCache(db);
  const get = (orderId: number): Settlement | undefined => {
    const row = statements
      .prepare("SELECT * FROM x402_settlements WHERE order_id = ?")
      .get(orderId) as SettlementRow | undefined;
    return row === undefined ? undefined : toSettlement(row);
  };

  return {
    claim: (orderId, claim, from, now) =>
      write(() => {
        const taken =
          from.kind === "pending"
            ? statements
                .prepare(
                  "UPDATE x402_settlements SET state = 'settling', claim = ?, claimed_at = ? WHERE order_id = ? AND state = 'pending'",
                )
                .run(claim, now, orderId)
            : statements
                .prepare(
                  `INSERT INTO x402_settlements (order_id, state, claim, claimed_at) VALUES (?, 'settling', ?, ?)
                   ON CONFLICT (order_id) DO UPDATE SET state = 'settling', claim = excluded.claim, claimed_at = excluded.claimed_at
                   WHERE x402_settlements.state = 'failed' OR (x402_settlements.state = 'settling' AND x402_settlements.claimed_at < ?)`,
                )
                .run(orderId, claim, now, from.staleBefore);
        return { claimed: taken.changes === 1, settlement: get(orderId)! };
      }),
    addAndClaim: (order, claim, now) =>
      write(() => {
        const added = orders.add(order, now);
        statements
          .prepare(
            "INSERT INTO x402_settlements (order_id, state, claim, claimed_at) VALUES (?, 'settling', ?, ?)",
          )
          .run(added.id, claim, now);
        return added;
      }),
    answer: (orderId, claim, outcome, now) =>
      write(() => {
        const done = statements
          .prepare(
            "UPDATE x402_settlements SET state = ?, tx_hash = ?, answer = ?, answered_at = ?, block_number = ? WHERE order_id = ? AND claim = ? AND state = 'settling'",
          )
          .run(
            outcome.state,
            outcome.txHash?.toLowerCase() ?? null,
            outcome.answer,
            now,
            outcome.blockNumber ?? null,
            orderId,
            claim,
          );
        return done.changes === 1;
      }),
    get: async (orderId) => get(orderId),
    contradicted: async () =>
      statements
        .pluck("SELECT COUNT(*) FROM x402_settlements WHERE contradicted_at IS NOT NULL")
        .get() as number,
  };
}
