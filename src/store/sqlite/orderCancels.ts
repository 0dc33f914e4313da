import type { Database } from "better-sqlite3";
import { CANCELABLE_STATES, type CancelStore } from "../cancelStore.js";
import { assertTransition, OrderStateError, type OrderState } from "../orderStates.js";
import { toOrder, type OrderRow, type SqliteOrders } from "./orders.js";
import { createStatementCache } from "./statementCache.js";

/**
 * The cancel's order transitions over one SQLite connection (cancelStore.ts), each in one `BEGIN
 * IMMEDIATE` transaction. `orders`: the connection's.
 */
export function createSqliteCancels(
  db: Database,
  chainId: number,
  orders: SqliteOrders,
  write: <T>(work: () => T) => Promise<T>,
): CancelStore {
  const statements = createStatementCache(db);
  /** The state the order was in when its cancel was accepted. */
  const cameFrom = (orderId: number): OrderState | undefined =>
    statements
      .pluck(
        "SELECT from_state FROM order_transitions WHERE order_id = ? AND to_state = 'canceling' ORDER BY id DESC LIMIT 1",
      )
      .get(orderId) as OrderState | undefined;
  return {
    begin: (token, authorizer, nonce, now) =>
      write(() => {
        const row = statements
          .prepare(
            "SELECT * FROM orders WHERE chain_id = ? AND token = ? AND authorizer = ? AND nonce = ?",
          )
          .get(chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()) as
          OrderRow | undefined;
        if (row === undefined) return undefined;
        const order = toOrder(row);
        if (order.state === "canceling")
          return { order, previous: cameFrom(order.id) ?? order.offchainState };
        if (!CANCELABLE_STATES.includes(order.state))
          throw new OrderStateError(
            `order ${order.id} is ${order.state}: a cancel is accepted only for an order ${CANCELABLE_STATES.join(", ")}; nothing was sent`,
          );
        assertTransition(order.state, "canceling", "merchant", order.id);
        statements
          .prepare("UPDATE orders SET state = 'canceling', updated_at = ? WHERE id = ?")
          .run(now, order.id);
        orders.recordTransition(order.id, order.state, "canceling", "cancel_accepted", now);
        return { order: orders.mustGet(order.id), previous: order.state };
      }),
    fail: (orderId, cause, now) =>
      write(() => {
        const order = orders.mustGet(orderId);
        if (order.state !== "canceling") return order;
        const back = cameFrom(orderId) ?? order.offchainState;
        assertTransition("canceling", back, "relay", orderId);
        statements
          .prepare("UPDATE orders SET state = ?, updated_at = ? WHERE id = ?")
          .run(back, now, orderId);
        orders.recordTransition(orderId, "canceling", back, cause, now);
        return orders.mustGet(orderId);
      }),
  };
}
