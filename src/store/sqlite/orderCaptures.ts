import type { Database } from "better-sqlite3";
import { FatalError } from "../../errors/base.js";
import { NonceLapsedError } from "../../errors/capture.js";
import {
  toCaptureIntent,
  type CaptureGasRow,
  type CaptureRow,
  type CaptureStore,
  type PaymentIdBinding,
} from "../captureStore.js";
import { assertTransition, type CaptureIntent } from "../orderStates.js";
import { captureHolder } from "../nonceBook.js";
import type { SqliteNonceMarks } from "./nonceBook.js";
import { toOrder, type OrderRow, type SqliteOrders } from "./orders.js";
import { createStatementCache } from "./statementCache.js";

/**
 * The capture relay's tables over one SQLite connection. `write` runs its work in one `BEGIN
 * IMMEDIATE` transaction (the store's write path), so the order is read under the write lock.
 * `orders` and `marks`: the connection's, whose moves run inside that transaction.
 */
export function createSqliteCaptures(
  db: Database,
  chainId: number,
  { orders, marks }: { orders: SqliteOrders; marks: SqliteNonceMarks },
  write: <T>(work: () => T) => Promise<T>,
): CaptureStore {
  const statements = createStatementCache(db);
  const get = (orderId: number): CaptureIntent | undefined => {
    const row = statements
      .prepare("SELECT * FROM order_captures WHERE order_id = ?")
      .get(orderId) as CaptureRow | undefined;
    return row === undefined ? undefined : toCaptureIntent(row);
  };
  const mustGetCapture = (orderId: number): CaptureIntent => {
    const capture = get(orderId);
    if (capture === undefined) throw new FatalError(`order ${orderId} has no capture intent`);
    return capture;
  };

  return {
    start: (orderId, tx, now, owner) =>
      write(() => {
        const order = orders.mustGet(orderId);
        const existing = get(orderId);
        if (existing !== undefined && existing.status !== "abandoned")
          return { order, capture: existing, created: false };
        assertTransition(order.state, "capturing", "relay", orderId);
        // The nonce must still be this capture's in the book: a reservation taken back meanwhile is not sent with.
        if (
          !marks.mark(
            { relayer: tx.relayer, nonce: tx.relayerNonce, holder: captureHolder(orderId) },
            "signed",
            tx.txHash,
            now,
          )
        )
          throw new NonceLapsedError(
            `relayer nonce ${tx.relayerNonce} is no longer reserved for order ${orderId}; nothing was stored or sent`,
          );
        statements
          .prepare(
            `INSERT INTO order_captures (order_id, relayer, relayer_nonce, tx_hash, raw_tx, max_fee_per_gas, max_priority_fee_per_gas, status, broadcasts,
             last_broadcast_at, replaced_tx_hashes, created_at, updated_at, owner, send_started_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 'sent', 0, NULL, '[]', ?, ?, ?, NULL)
           ON CONFLICT (order_id) DO UPDATE SET relayer = excluded.relayer, relayer_nonce = excluded.relayer_nonce, tx_hash = excluded.tx_hash,
             raw_tx = excluded.raw_tx, max_fee_per_gas = excluded.max_fee_per_gas, max_priority_fee_per_gas = excluded.max_priority_fee_per_gas,
             status = 'sent', broadcasts = 0, last_broadcast_at = NULL, first_broadcast_at = NULL, replaced_tx_hashes = '[]', created_at = excluded.created_at, updated_at = excluded.updated_at,
             owner = excluded.owner, send_started_at = NULL`,
          )
          .run(
            orderId,
            lower(tx.relayer),
            tx.relayerNonce,
            lower(tx.txHash),
            lower(tx.rawTx),
            tx.maxFeePerGas.toString(),
            tx.maxPriorityFeePerGas.toString(),
            now,
            now,
            owner ?? null,
          );
        statements
          .prepare("UPDATE orders SET state = 'capturing', updated_at = ? WHERE id = ?")
          .run(now, orderId);
        orders.recordTransition(
          orderId,
          order.state,
          "capturing",
          "capture_sent",
          now,
          lower(tx.txHash),
        );
        return { order: orders.mustGet(orderId), capture: mustGetCapture(orderId), created: true };
      }),
    get: async (orderId) => get(orderId),
    recentGas: async (limit) => {
      // Gas columns are decimal TEXT: read as text and summed as bigint by the caller, never cast
      // to SQLite's 64-bit INTEGER, which a uint256 price could overflow.
      const rows = statements
        .prepare(
          `SELECT c.order_id, o.payee, c.gas_used, c.effective_gas_price FROM order_captures c
             JOIN orders o ON o.id = c.order_id
           WHERE c.gas_used IS NOT NULL ORDER BY c.order_id DESC LIMIT ?`,
        )
        .all(limit) as GasRow[];
      return rows.map(toCaptureGasRow);
    },
    capturedWithoutGas: async (since) => {
      // `+o.state`: no index on the order's state, whose captured rows are every capture ever
      // made; the capture's recent change (order_captures_without_gas, schema 18) leads instead.
      const rows = db
        .prepare(
          `SELECT o.*, c.order_id AS capture_order_id FROM order_captures c JOIN orders o ON o.id = c.order_id
           WHERE c.gas_used IS NULL AND c.updated_at >= ? AND c.status IN ('sent', 'landed') AND +o.state = 'captured'
           ORDER BY c.updated_at`,
        )
        .all(since) as Array<OrderRow & { capture_order_id: number }>;
      return rows.map((row) => ({
        order: toOrder(row),
        capture: mustGetCapture(row.capture_order_id),
      }));
    },
    pending: async () => {
      const rows = statements
        .prepare(
          "SELECT o.*, c.order_id AS capture_order_id FROM orders o JOIN order_captures c ON c.order_id = o.id WHERE c.status = 'sent' AND o.state = 'capturing' ORDER BY o.id",
        )
        .all() as Array<OrderRow & { capture_order_id: number }>;
      return rows.map((row) => ({
        order: toOrder(row),
        capture: mustGetCapture(row.capture_order_id),
      }));
    },
    claimSend: (orderId, txHash, now) =>
      write(() => {
        const claimed = statements
          .prepare(
            `UPDATE order_captures SET send_started_at = COALESCE(send_started_at, ?), updated_at = ?
             WHERE order_id = ? AND tx_hash = ? AND status = 'sent' AND EXISTS (SELECT 1 FROM orders o WHERE o.id = order_id AND o.state = 'capturing')`,
          )
          .run(now, now, orderId, lower(txHash)).changes;
        return claimed === 1;
      }),
    recordBroadcast: (orderId, txHash, now) =>
      write(() => {
        const changed = statements
          .prepare(
            "UPDATE order_captures SET broadcasts = broadcasts + 1, last_broadcast_at = ?, first_broadcast_at = COALESCE(first_broadcast_at, ?), send_started_at = COALESCE(send_started_at, ?), updated_at = ? WHERE order_id = ? AND tx_hash = ?",
          )
          .run(now, now, now, now, orderId, lower(txHash)).changes;
        const capture = get(orderId);
        if (changed === 1 && capture !== undefined)
          marks.mark(
            {
              relayer: capture.relayer,
              nonce: capture.relayerNonce,
              holder: captureHolder(orderId),
            },
            "broadcast",
            txHash,
            now,
          );
      }),
    recordGas: (orderId, txHash, gas, now) =>
      write(() => {
        statements
          .prepare(
            "UPDATE order_captures SET gas_used = ?, effective_gas_price = ?, gas_tx_hash = ?, updated_at = ? WHERE order_id = ?",
          )
          .run(
            gas.gasUsed.toString(),
            gas.effectiveGasPrice?.toString() ?? null,
            lower(txHash),
            now,
            orderId,
          );
      }),
    replace: (orderId, tx, now) =>
      write(() => {
        const current = mustGetCapture(orderId);
        const replaced = JSON.stringify([...current.replacedTxHashes, current.txHash]);
        statements
          .prepare(
            `UPDATE order_captures SET relayer = ?, relayer_nonce = ?, tx_hash = ?, raw_tx = ?, max_fee_per_gas = ?, max_priority_fee_per_gas = ?,
             replaced_tx_hashes = ?, broadcasts = 0, last_broadcast_at = NULL, first_broadcast_at = NULL, updated_at = ? WHERE order_id = ?`,
          )
          .run(
            lower(tx.relayer),
            tx.relayerNonce,
            lower(tx.txHash),
            lower(tx.rawTx),
            tx.maxFeePerGas.toString(),
            tx.maxPriorityFeePerGas.toString(),
            replaced,
            now,
            orderId,
          );
        statements
          .prepare(
            "UPDATE relayer_nonces SET tx_hash = ?, updated_at = ? WHERE chain_id = ? AND relayer = ? AND nonce = ? AND holder = ?",
          )
          .run(
            lower(tx.txHash),
            now,
            chainId,
            lower(tx.relayer),
            tx.relayerNonce,
            captureHolder(orderId),
          );
        return mustGetCapture(orderId);
      }),
    abandon: (orderId, now, why = {}) =>
      write(() => {
        const order = orders.mustGet(orderId);
        const capture = get(orderId);
        if (why.nonceUnused === true && capture !== undefined && capture.status === "sent")
          marks.release(
            {
              relayer: capture.relayer,
              nonce: capture.relayerNonce,
              holder: captureHolder(orderId),
            },
            now,
          );
        statements
          .prepare(
            "UPDATE order_captures SET status = 'abandoned', updated_at = ? WHERE order_id = ? AND status = 'sent'",
          )
          .run(now, orderId);
        if (order.state !== "capturing") return order;
        assertTransition(order.state, "authorized", "relay", orderId);
        statements
          .prepare("UPDATE orders SET state = 'authorized', updated_at = ? WHERE id = ?")
          .run(now, orderId);
        orders.recordTransition(
          orderId,
          order.state,
          "authorized",
          why.cause ?? "capture_abandoned",
          now,
          why.txHash === undefined ? undefined : lower(why.txHash),
        );
        return orders.mustGet(orderId);
      }),
    findOrder: async (chainId, token, authorizer, nonce) => {
      const row = statements
        .prepare(
          "SELECT * FROM orders WHERE chain_id = ? AND token = ? AND authorizer = ? AND nonce = ?",
        )
        .get(chainId, lower(token), lower(authorizer), lower(nonce)) as OrderRow | undefined;
      return row === undefined ? undefined : toOrder(row);
    },
    bindPaymentId: (binding, now) =>
      write(() => {
        statements
          .prepare(
            "INSERT INTO x402_payment_ids (payment_id, fingerprint, order_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (payment_id) DO NOTHING",
          )
          .run(binding.paymentId, binding.fingerprint, binding.orderId, now);
        return getPaymentId(binding.paymentId)!;
      }),
    getPaymentId: async (paymentId) => getPaymentId(paymentId),
  };

  function getPaymentId(paymentId: string): PaymentIdBinding | undefined {
    const row = statements
      .prepare(
        "SELECT payment_id, fingerprint, order_id FROM x402_payment_ids WHERE payment_id = ?",
      )
      .get(paymentId) as { payment_id: string; fingerprint: string; order_id: number } | undefined;
    return row === undefined
      ? undefined
      : { paymentId: row.payment_id, fingerprint: row.fingerprint, orderId: row.order_id };
  }
}

const lower = <T extends string>(value: T): T => value.toLowerCase() as T;

type GasRow = {
  order_id: number;
  payee: string;
  gas_used: string;
  effective_gas_price: string | null;
};

function toCaptureGasRow(row: GasRow): CaptureGasRow {
  return {
    orderId: Number(row.order_id),
    payee: row.payee.toLowerCase() as CaptureGasRow["payee"],
    gasUsed: BigInt(row.gas_used),
    effectiveGasPrice: row.effective_gas_price === null ? null : BigInt(row.effective_gas_price),
  };
}
