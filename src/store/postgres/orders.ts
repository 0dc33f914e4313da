import type pg from "pg";
import { LIVE_STATUS_LIST_SQL } from "../liveStatus.js";
import {
  assertTransition,
  OrderExistsError,
  OrderNotFoundError,
  type NewOrder,
  type Order,
  type OrderState,
  type OrderTransition,
} from "../orderStates.js";

/** Postgres: unique_violation. */
const UNIQUE_VIOLATION = "23505";

const SELECT_ORDER = `SELECT id, chain_id AS "chainId", token, authorizer, payee, value, valid_after AS "validAfter", valid_before AS "validBefore",
  nonce, kind, signature, state, offchain_state AS "offchainState", event_status AS "eventStatus", event_tx_hash AS "eventTxHash",
  voided_then_captured AS "voidedThenCaptured", source, created_at AS "createdAt", updated_at AS "updatedAt" FROM orders`;
const SELECT_TRANSITION = `SELECT id, order_id AS "orderId", from_state AS "fromState", to_state AS "toState", event_status AS "eventStatus",
  cause, tx_hash AS "txHash", at FROM order_transitions`;

const lower = <T extends string>(value: T): T => value.toLowerCase() as T;

/**
 * Merchant orders over a Postgres connection (see orderStates.ts). Off-chain transitions lock the
 * order row (SELECT … FOR UPDATE) before reading its state, so a void and a capture committed by the
 * daemon on another connection are serialised and the loser sees the winner's state; the trigger
 * `orders_refuse_illegal_transition` refuses anything else. Writers run inside the caller's transaction.
 */
export function createPostgresOrders(client: pg.ClientBase) {
  async function get(id: number, lock = false): Promise<Order | undefined> {
    const { rows } = await client.query(
      `${SELECT_ORDER} WHERE id = $1${lock ? " FOR UPDATE" : ""}`,
      [id],
    );
    return rows[0];
  }
  async function mustGet(id: number, lock = false): Promise<Order> {
    const order = await get(id, lock);
    if (order === undefined) throw new OrderNotFoundError(`no order ${id}`);
    return order;
  }
  const record = (orderId: number, from: OrderState, to: OrderState, cause: string, now: number) =>
    client.query(
      "INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at) VALUES ($1, $2, $3, NULL, $4, NULL, $5)",
      [orderId, from, to, cause, now],
    );

  return {
    get,
    async add(order: NewOrder, now: number): Promise<Order> {
      const key = [order.chainId, lower(order.token), lower(order.authorizer), lower(order.nonce)];
      const existing = await client.query(
        "SELECT id FROM orders WHERE chain_id = $1 AND token = $2 AND authorizer = $3 AND nonce = $4",
        key,
      );
      if (existing.rows.length > 0)
        throw new OrderExistsError(
          `order ${existing.rows[0].id} already holds the authorization of ${lower(order.authorizer)} with nonce ${lower(order.nonce)}`,
        );
      try {
        const { rows } = await client.query(
          `INSERT INTO orders (chain_id, token, authorizer, payee, value, valid_after, valid_before, nonce, kind, signature, state, created_at, updated_at, source)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'authorized', $11, $11, $12) RETURNING id`,
          [
            ...key.slice(0, 3),
            lower(order.payee),
            order.value.toString(),
            order.validAfter,
            order.validBefore,
            key[3],
            order.kind,
            lower(order.signature),
            now,
            order.source ?? "merchant",
          ],
        );
        return await mustGet(rows[0].id);
      } catch (error) {
        // Another connection added the same authorization meanwhile.
        if ((error as { code?: string }).code === UNIQUE_VIOLATION)
          throw new OrderExistsError(
            `an order already holds the authorization of ${lower(order.authorizer)} with nonce ${lower(order.nonce)}`,
          );
        throw error;
      }
    },
    async void(id: number, now: number): Promise<Order> {
      const order = await mustGet(id, true);
      assertTransition(order.state, "voided_offchain", "merchant", id);
      await client.query(
        "UPDATE orders SET state = 'voided_offchain', offchain_state = 'voided_offchain', updated_at = $1 WHERE id = $2",
        [now, id],
      );
      await record(id, order.state, "voided_offchain", "voided", now);
      return mustGet(id);
    },
    async expire(now: number): Promise<number[]> {
      const { rows } = await client.query(
        `SELECT o.id, o.state FROM orders o
         WHERE o.state IN ('authorized', 'capturing', 'canceling', 'voided_offchain') AND o.valid_before <= $1
           AND NOT EXISTS (SELECT 1 FROM authorization_events e
             WHERE e.token = o.token AND e.authorizer = o.authorizer AND e.nonce = o.nonce AND e.chain_id = o.chain_id
               AND e.status IN ${LIVE_STATUS_LIST_SQL})
         ORDER BY o.id FOR UPDATE OF o SKIP LOCKED`,
        [Math.floor(now / 1000)],
      );
      for (const { id, state } of rows as Array<{ id: number; state: OrderState }>) {
        assertTransition(state, "expired", "expiry", id);
        await client.query("UPDATE orders SET state = 'expired', updated_at = $1 WHERE id = $2", [
          now,
          id,
        ]);
        await record(id, state, "expired", "expired", now);
      }
      return rows.map((r: { id: number }) => r.id);
    },
    async list(filter: { state?: OrderState | undefined } = {}): Promise<Order[]> {
      const { rows } =
        filter.state === undefined
          ? await client.query(`${SELECT_ORDER} ORDER BY id`)
          : await client.query(`${SELECT_ORDER} WHERE state = $1 ORDER BY id`, [filter.state]);
      return rows;
    },
    async transitions(orderId: number): Promise<OrderTransition[]> {
      return (await client.query(`${SELECT_TRANSITION} WHERE order_id = $1 ORDER BY id`, [orderId]))
        .rows;
    },
    async voidedThenCapturedSince(afterId: number): Promise<OrderTransition[]> {
      return (
        await client.query(
          `${SELECT_TRANSITION} WHERE cause = 'captured_after_void' AND id > $1 ORDER BY id`,
          [afterId],
        )
      ).rows;
    },
  };
}
