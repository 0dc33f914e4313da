import type { Database } from "better-sqlite3";
import type { Address, Hex } from "viem";
import { LIVE_STATUS_LIST_SQL } from "../liveStatus.js";
import { createStatementCache } from "./statementCache.js";
import {
  assertTransition,
  OrderExistsError,
  OrderNotFoundError,
  type EventStatus,
  type NewOrder,
  type Order,
  type OrderKind,
  type OrderSource,
  type OrderState,
  type OrderTransition,
} from "../orderStates.js";

/**
 * The SQLite side of merchant orders (see orderStates.ts for the states and transitions). Off-chain
 * transitions run each in one `BEGIN IMMEDIATE` transaction that reads the current state under the
 * write lock, so two writers (a void and the daemon storing a capture) are serialised and the loser
 * sees the winner's state.
 */

export type OrderRow = {
  id: number;
  chain_id: number;
  token: Address;
  authorizer: Address;
  payee: Address;
  value: string;
  valid_after: number;
  valid_before: number;
  nonce: Hex;
  kind: OrderKind;
  signature: Hex;
  state: OrderState;
  offchain_state: "authorized" | "voided_offchain";
  event_status: EventStatus | null;
  event_tx_hash: Hex | null;
  voided_then_captured: number;
  source: OrderSource;
  created_at: number;
  updated_at: number;
};

export function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    source: row.source,
    chainId: row.chain_id,
    token: row.token,
    authorizer: row.authorizer,
    payee: row.payee,
    value: row.value,
    validAfter: row.valid_after,
    validBefore: row.valid_before,
    nonce: row.nonce,
    kind: row.kind,
    signature: row.signature,
    state: row.state,
    offchainState: row.offchain_state,
    eventStatus: row.event_status,
    eventTxHash: row.event_tx_hash,
    voidedThenCaptured: row.voided_then_captured === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const SELECT_ORDER = "SELECT * FROM orders";

/**
 * Merchant orders over a SQLite connection, each operation its own transaction (as Postgres's
 * postgres/orders.ts); `mustGet` and `recordTransition` run inside a caller's transaction.
 */
export function createSqliteOrders(db: Database) {
  const statements = createStatementCache(db);

  /** Stores a verified authorization as an authorized order (or as indexed events say). */
  const add = db.transaction((order: NewOrder, now: number): Order => {
    const existing = statements
      .pluck(
        "SELECT id FROM orders WHERE chain_id = ? AND token = ? AND authorizer = ? AND nonce = ?",
      )
      .get(order.chainId, lower(order.token), lower(order.authorizer), lower(order.nonce)) as
      number | undefined;
    if (existing !== undefined)
      throw new OrderExistsError(
        `order ${existing} already holds the authorization of ${lower(order.authorizer)} with nonce ${lower(order.nonce)}`,
      );
    // `source` (schema 12) is written only when given: the column's default says merchant. Two
    // SQL texts, so two kept statements.
    const source = order.source === undefined ? [] : [order.source];
    const { lastInsertRowid } = statements
      .prepare(
        `INSERT INTO orders (chain_id, token, authorizer, payee, value, valid_after, valid_before, nonce, kind, signature, state, created_at, updated_at${source.length > 0 ? ", source" : ""})
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'authorized', ?, ?${source.length > 0 ? ", ?" : ""})`,
      )
      .run(
        order.chainId,
        lower(order.token),
        lower(order.authorizer),
        lower(order.payee),
        order.value.toString(),
        order.validAfter,
        order.validBefore,
        lower(order.nonce),
        order.kind,
        lower(order.signature),
        now,
        now,
        ...source,
      );
    return mustGet(Number(lastInsertRowid));
  });

  /**
   * Marks an authorized order voided off chain: the merchant will never submit it. Refused
   * (OrderStateError) from any other state, in particular once a capture is indexed, even
   * pre-confirmed.
   */
  const voidOrder = db.transaction((id: number, now: number): Order => {
    const order = mustGet(id);
    assertTransition(order.state, "voided_offchain", "merchant", id);
    statements
      .prepare(
        "UPDATE orders SET state = 'voided_offchain', offchain_state = 'voided_offchain', updated_at = ? WHERE id = ?",
      )
      .run(now, id);
    recordTransition(id, order.state, "voided_offchain", "voided", now);
    return mustGet(id);
  });

  /**
   * Expires authorized, capturing and voided orders whose validBefore (unix s) is at or before
   * `now` (unix ms) and that have no live event. Returns the ids expired.
   */
  const expire = db.transaction((now: number): number[] => {
    const ids = statements
      .pluck(
        `SELECT o.id FROM orders o
         WHERE o.state IN ('authorized', 'capturing', 'canceling', 'voided_offchain') AND o.valid_before <= ?
           AND NOT EXISTS (SELECT 1 FROM authorization_events e
             WHERE e.token = o.token AND e.authorizer = o.authorizer AND e.nonce = o.nonce AND e.chain_id = o.chain_id
               AND e.status IN ${LIVE_STATUS_LIST_SQL})
         ORDER BY o.id`,
      )
      .all(Math.floor(now / 1000)) as number[];
    const expired = statements.prepare(
      "UPDATE orders SET state = 'expired', updated_at = ? WHERE id = ?",
    );
    for (const id of ids) {
      const from = mustGet(id).state;
      assertTransition(from, "expired", "expiry", id);
      expired.run(now, id);
      recordTransition(id, from, "expired", "expired", now);
    }
    return ids;
  });

  function get(id: number): Order | undefined {
    const row = statements.prepare(`${SELECT_ORDER} WHERE id = ?`).get(id) as OrderRow | undefined;
    return row === undefined ? undefined : toOrder(row);
  }

  function mustGet(id: number): Order {
    const order = get(id);
    if (order === undefined) throw new OrderNotFoundError(`no order ${id}`);
    return order;
  }

  /** One audit row for an off-chain transition (its webhook event: schema 7's trigger). */
  function recordTransition(
    orderId: number,
    from: OrderState,
    to: OrderState,
    cause: string,
    now: number,
    txHash: Hex | null = null,
  ): void {
    statements
      .prepare(
        "INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at) VALUES (?, ?, ?, NULL, ?, ?, ?)",
      )
      .run(orderId, from, to, cause, txHash, now);
  }

  const transitions = (sql: string, arg: number): OrderTransition[] =>
    (statements.prepare(sql).all(arg) as TransitionRow[]).map(toTransition);

  return {
    add: (order: NewOrder, now: number): Order => add.immediate(order, now),
    void: (id: number, now: number): Order => voidOrder.immediate(id, now),
    expire: (now: number): number[] => expire.immediate(now),
    get,
    /** Orders by id, optionally in one state. */
    list: (filter: { state?: OrderState | undefined } = {}): Order[] =>
      (
        (filter.state === undefined
          ? statements.prepare(`${SELECT_ORDER} ORDER BY id`).all()
          : statements
              .prepare(`${SELECT_ORDER} WHERE state = ? ORDER BY id`)
              .all(filter.state)) as OrderRow[]
      ).map(toOrder),
    /** The audit trail of one order, oldest first. */
    transitions: (orderId: number): OrderTransition[] =>
      transitions("SELECT * FROM order_transitions WHERE order_id = ? ORDER BY id", orderId),
    /** Captures of voided orders recorded after transition `afterId` (the daemon alerts). */
    voidedThenCapturedSince: (afterId: number): OrderTransition[] =>
      transitions(
        "SELECT * FROM order_transitions WHERE cause = 'captured_after_void' AND id > ? ORDER BY id",
        afterId,
      ),
    /** Inside a caller's transaction: the order, or OrderNotFoundError. */
    mustGet,
    recordTransition,
  };
}

export type SqliteOrders = ReturnType<typeof createSqliteOrders>;

type TransitionRow = {
  id: number;
  order_id: number;
  from_state: OrderState | null;
  to_state: OrderState;
  event_status: EventStatus | null;
  cause: string;
  tx_hash: Hex | null;
  at: number;
};

function toTransition(row: TransitionRow): OrderTransition {
  return {
    id: row.id,
    orderId: row.order_id,
    fromState: row.from_state,
    toState: row.to_state,
    eventStatus: row.event_status,
    cause: row.cause,
    txHash: row.tx_hash,
    at: row.at,
  };
}

const lower = <T extends string>(value: T): T => value.toLowerCase() as T;
