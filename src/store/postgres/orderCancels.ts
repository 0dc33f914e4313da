import type pg from "pg";
import type { Order } from "../orderStates.js";
import { CANCELABLE_STATES, type CancelStore } from "../cancelStore.js";
import { assertTransition, OrderStateError, type OrderState } from "../orderStates.js";
import { createPostgresOrders } from "./orders.js";

type InTransaction = <T>(work: (client: pg.ClientBase) => Promise<T>) => Promise<T>;

/** The cancel's order transitions over Postgres (cancelStore.ts): the order row is locked (FOR UPDATE) before its state is read. */
export function createPostgresCancels(chainId: number, write: InTransaction): CancelStore {
  const record = (
    client: pg.ClientBase,
    orderId: number,
    from: OrderState,
    to: OrderState,
    cause: string,
    now: number,
  ) =>
    client.query(
      "INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at) VALUES ($1, $2, $3, NULL, $4, NULL, $5)",
      [orderId, from, to, cause, now],
    );
  const mustGet = async (client: pg.ClientBase, id: number): Promise<Order> =>
    (await createPostgresOrders(client).get(id))!;
  /** The state the order was in when its cancel was accepted. */
  const cameFrom = async (
    client: pg.ClientBase,
    orderId: number,
  ): Promise<OrderState | undefined> => {
    const { rows } = await client.query(
      "SELECT from_state FROM order_transitions WHERE order_id = $1 AND to_state = 'canceling' ORDER BY id DESC LIMIT 1",
      [orderId],
    );
    return rows[0]?.from_state as OrderState | undefined;
  };
  return {
    begin: (token, authorizer, nonce, now) =>
      write(async (client) => {
        const { rows } = await client.query(
          "SELECT id FROM orders WHERE chain_id = $1 AND token = $2 AND authorizer = $3 AND nonce = $4",
          [chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()],
        );
        if (rows[0] === undefined) return undefined;
        const order = (await createPostgresOrders(client).get(Number(rows[0].id), true))!;
        if (order.state === "canceling")
          return { order, previous: (await cameFrom(client, order.id)) ?? order.offchainState };
        if (!CANCELABLE_STATES.includes(order.state))
          throw new OrderStateError(
            `order ${order.id} is ${order.state}: a cancel is accepted only for an order ${CANCELABLE_STATES.join(", ")}; nothing was sent`,
          );
        assertTransition(order.state, "canceling", "merchant", order.id);
        await client.query("UPDATE orders SET state = 'canceling', updated_at = $1 WHERE id = $2", [
          now,
          order.id,
        ]);
        await record(client, order.id, order.state, "canceling", "cancel_accepted", now);
        return { order: await mustGet(client, order.id), previous: order.state };
      }),
    fail: (orderId, cause, now) =>
      write(async (client) => {
        const order = (await createPostgresOrders(client).get(orderId, true))!;
        if (order.state !== "canceling") return order;
        const back = (await cameFrom(client, orderId)) ?? order.offchainState;
        assertTransition("canceling", back, "relay", orderId);
        await client.query("UPDATE orders SET state = $1, updated_at = $2 WHERE id = $3", [
          back,
          now,
          orderId,
        ]);
        await record(client, orderId, "canceling", back, cause, now);
        return mustGet(client, orderId);
      }),
  };
}
