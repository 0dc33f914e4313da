import type pg from "pg";
import { createPostgresOrders } from "./orders.js";
import { toSettlement, type Settlement, type SettlementStore } from "../settlementStore.js";

type InTransaction = <T>(work: (client: pg.ClientBase) => Promise<T>) => Promise<T>;

const COLUMNS =
  "order_id, state, claim, tx_hash, answer, claimed_at, answered_at, contradicted_at, contradiction";

/**
 * The x402 facilitator's settle claims over Postgres (schema 16; see settlementStore.ts). A claim
 * is one statement whose conflict or WHERE clause Postgres re-checks on the locked row: of two
 * processes claiming one order at once, exactly one changes it.
 */
export function createPostgresSettlements(
  write: InTransaction,
  read: InTransaction,
): SettlementStore {
  const get = async (client: pg.ClientBase, orderId: number): Promise<Settlement | undefined> => {
    const { rows } = await client.query(
      `SELECT ${COLUMNS} FROM x402_settlements WHERE order_id = $1`,
      [orderId],
    );
    return rows[0] === undefined ? undefined : toSettlement(rows[0]);
  };

  return {
    claim: (orderId, claim, from, now) =>
      write(async (client) => {
        const taken =
          from.kind === "pending"
            ? await client.query(
                "UPDATE x402_settlements SET state = 'settling', claim = $1, claimed_at = $2 WHERE order_id = $3 AND state = 'pending'",
                [claim, now, orderId],
              )
            : await client.query(
                `INSERT INTO x402_settlements (order_id, state, claim, claimed_at) VALUES ($1, 'settling', $2, $3)
                 ON CONFLICT (order_id) DO UPDATE SET state = 'settling', claim = excluded.claim, claimed_at = excluded.claimed_at
                 WHERE x402_settlements.state = 'failed' OR (x402_settlements.state = 'settling' AND x402_settlements.claimed_at < $4)`,
                [orderId, claim, now, from.staleBefore],
              );
        return { claimed: taken.rowCount === 1, settlement: (await get(client, orderId))! };
      }),
    addAndClaim: (order, claim, now) =>
      write(async (client) => {
        const added = await createPostgresOrders(client).add(order, now);
        await client.query(
          "INSERT INTO x402_settlements (order_id, state, claim, claimed_at) VALUES ($1, 'settling', $2, $3)",
          [added.id, claim, now],
        );
        return added;
      }),
    answer: (orderId, claim, outcome, now) =>
      write(async (client) => {
        const done = await client.query(
          "UPDATE x402_settlements SET state = $1, tx_hash = $2, answer = $3, answered_at = $4, block_number = $5 WHERE order_id = $6 AND claim = $7 AND state = 'settling'",
          [
            outcome.state,
            outcome.txHash?.toLowerCase() ?? null,
            outcome.answer,
            now,
            outcome.blockNumber?.toString() ?? null,
            orderId,
            claim,
          ],
        );
        return done.rowCount === 1;
      }),
    get: (orderId) => read((client) => get(client, orderId)),
    contradicted: () =>
      read(async (client) =>
        Number(
          (
            await client.query(
              "SELECT COUNT(*) AS n FROM x402_settlements WHERE contradicted_at IS NOT NULL",
            )
          ).rows[0].n,
        ),
      ),
  };
}
