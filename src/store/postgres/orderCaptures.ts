import type pg from "pg";
import { FatalError } from "../../errors/base.js";
import { NonceLapsedError } from "../../errors/capture.js";
import { captureHolder } from "../nonceBook.js";
import { markNonce, releaseNonce } from "./nonceBook.js";
import {
  toCaptureIntent,
  type CaptureGasRow,
  type CaptureStore,
  type PaymentIdBinding,
} from "../captureStore.js";
import { assertTransition, OrderNotFoundError, type CaptureIntent } from "../orderStates.js";
import { createPostgresOrders } from "./orders.js";

type InTransaction = <T>(work: (client: pg.ClientBase) => Promise<T>) => Promise<T>;

const CAPTURE_COLUMNS = `order_id, relayer, relayer_nonce, tx_hash, raw_tx, max_fee_per_gas::text AS max_fee_per_gas,
  max_priority_fee_per_gas::text AS max_priority_fee_per_gas, replaced_tx_hashes, status, broadcasts, last_broadcast_at, first_broadcast_at, created_at, updated_at,
  owner, send_started_at, gas_used::text AS gas_used, effective_gas_price::text AS effective_gas_price`;

/**
 * The capture relay's tables over Postgres (see captureStore.ts). Writers lock the order row
 * (SELECT … FOR UPDATE) before reading its state and intent, as orders.ts does: two processes
 * capturing one order are serialised and the second finds the first one's intent.
 */
export function createPostgresCaptures(
  chainId: number,
  write: InTransaction,
  read: InTransaction,
): CaptureStore {
  const get = async (
    client: pg.ClientBase,
    orderId: number,
  ): Promise<CaptureIntent | undefined> => {
    const { rows } = await client.query(
      `SELECT ${CAPTURE_COLUMNS} FROM order_captures WHERE order_id = $1`,
      [orderId],
    );
    return rows[0] === undefined ? undefined : toCaptureIntent(rows[0]);
  };
  const mustGetCapture = async (client: pg.ClientBase, orderId: number): Promise<CaptureIntent> => {
    const capture = await get(client, orderId);
    if (capture === undefined) throw new FatalError(`order ${orderId} has no capture intent`);
    return capture;
  };
  const mustGetOrder = async (client: pg.ClientBase, orderId: number, lock: boolean) => {
    const order = await createPostgresOrders(client).get(orderId, lock);
    if (order === undefined) throw new OrderNotFoundError(`no order ${orderId}`);
    return order;
  };
  const transition = (
    client: pg.ClientBase,
    orderId: number,
    from: string,
    to: string,
    cause: string,
    now: number,
    txHash: string | null,
  ) =>
    client.query(
      "INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at) VALUES ($1, $2, $3, NULL, $4, $5, $6)",
      [orderId, from, to, cause, txHash, now],
    );
  const binding = async (
    client: pg.ClientBase,
    paymentId: string,
  ): Promise<PaymentIdBinding | undefined> => {
    const { rows } = await client.query(
      `SELECT payment_id AS "paymentId", fingerprint, order_id AS "orderId" FROM x402_payment_ids WHERE payment_id = $1`,
      [paymentId],
    );
    return rows[0] === undefined ? undefined : { ...rows[0], orderId: Number(rows[0].orderId) };
  };

  return {
    start: (orderId, tx, now, owner) =>
      write(async (client) => {
        const order = await mustGetOrder(client, orderId, true);
        const existing = await get(client, orderId);
        if (existing !== undefined && existing.status !== "abandoned")
          return { order, capture: existing, created: false };
        assertTransition(order.state, "capturing", "relay", orderId);
        // The nonce must still be this capture's in the book: a reservation taken back meanwhile is not sent with.
        if (
          !(await markNonce(
            client,
            chainId,
            { relayer: tx.relayer, nonce: tx.relayerNonce, holder: captureHolder(orderId) },
            "signed",
            tx.txHash,
            now,
          ))
        )
          throw new NonceLapsedError(
            `relayer nonce ${tx.relayerNonce} is no longer reserved for order ${orderId}; nothing was stored or sent`,
          );
        await client.query(
          `INSERT INTO order_captures (order_id, relayer, relayer_nonce, tx_hash, raw_tx, max_fee_per_gas, max_priority_fee_per_gas, status, broadcasts,
             last_broadcast_at, replaced_tx_hashes, created_at, updated_at, owner, send_started_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'sent', 0, NULL, '[]', $8, $8, $9, NULL)
           ON CONFLICT (order_id) DO UPDATE SET relayer = excluded.relayer, relayer_nonce = excluded.relayer_nonce, tx_hash = excluded.tx_hash,
             raw_tx = excluded.raw_tx, max_fee_per_gas = excluded.max_fee_per_gas, max_priority_fee_per_gas = excluded.max_priority_fee_per_gas,
             status = 'sent', broadcasts = 0, last_broadcast_at = NULL, first_broadcast_at = NULL, replaced_tx_hashes = '[]', created_at = excluded.created_at, updated_at = excluded.updated_at,
             owner = excluded.owner, send_started_at = NULL`,
          [
            orderId,
            tx.relayer.toLowerCase(),
            tx.relayerNonce,
            tx.txHash.toLowerCase(),
            tx.rawTx.toLowerCase(),
            tx.maxFeePerGas.toString(),
            tx.maxPriorityFeePerGas.toString(),
            now,
            owner ?? null,
          ],
        );
        await client.query("UPDATE orders SET state = 'capturing', updated_at = $1 WHERE id = $2", [
          now,
          orderId,
        ]);
        await transition(
          client,
          orderId,
          order.state,
          "capturing",
          "capture_sent",
          now,
          tx.txHash.toLowerCase(),
        );
        return {
          order: await mustGetOrder(client, orderId, false),
          capture: await mustGetCapture(client, orderId),
          created: true,
        };
      }),
    get: (orderId) => read((client) => get(client, orderId)),
    recentGas: (limit) =>
      read(async (client) => {
        // numeric(78, 0) read as text: node-postgres would not turn it into a bigint.
        const { rows } = await client.query(
          `SELECT c.order_id, o.payee, c.gas_used::text AS gas_used,
             c.effective_gas_price::text AS effective_gas_price
           FROM order_captures c JOIN orders o ON o.id = c.order_id
           WHERE c.gas_used IS NOT NULL ORDER BY c.order_id DESC LIMIT $1`,
          [limit],
        );
        return (rows as GasRow[]).map(toCaptureGasRow);
      }),
    pending: () =>
      read(async (client) => {
        const { rows } = await client.query(
          "SELECT c.order_id FROM order_captures c JOIN orders o ON o.id = c.order_id WHERE c.status = 'sent' AND o.state = 'capturing' ORDER BY c.order_id",
        );
        const result = [];
        for (const row of rows as Array<{ order_id: string | number }>) {
          const orderId = Number(row.order_id);
          result.push({
            order: await mustGetOrder(client, orderId, false),
            capture: await mustGetCapture(client, orderId),
          });
        }
        return result;
      }),
    capturedWithoutGas: (since) =>
      read(async (client) => {
        const { rows } = await client.query(
          `SELECT c.order_id FROM order_captures c JOIN orders o ON o.id = c.order_id
           WHERE c.gas_used IS NULL AND c.updated_at >= $1 AND c.status IN ('sent', 'landed') AND o.state = 'captured'
           ORDER BY c.updated_at`,
          [since],
        );
        const result = [];
        for (const row of rows as Array<{ order_id: string | number }>) {
          const orderId = Number(row.order_id);
          result.push({
            order: await mustGetOrder(client, orderId, false),
            capture: await mustGetCapture(client, orderId),
          });
        }
        return result;
      }),
    claimSend: (orderId, txHash, now) =>
      write(async (client) => {
        await createPostgresOrders(client).get(orderId, true);
        const { rowCount } = await client.query(
          `UPDATE order_captures c SET send_started_at = COALESCE(c.send_started_at, $1), updated_at = $1
           WHERE c.order_id = $2 AND c.tx_hash = $3 AND c.status = 'sent' AND EXISTS (SELECT 1 FROM orders o WHERE o.id = c.order_id AND o.state = 'capturing')`,
          [now, orderId, txHash.toLowerCase()],
        );
        return rowCount === 1;
      }),
    recordGas: (orderId, txHash, gas, now) =>
      write(async (client) => {
        await client.query(
          "UPDATE order_captures SET gas_used = $1, effective_gas_price = $2, gas_tx_hash = $3, updated_at = $4 WHERE order_id = $5",
          [
            gas.gasUsed.toString(),
            gas.effectiveGasPrice?.toString() ?? null,
            txHash.toLowerCase(),
            now,
            orderId,
          ],
        );
      }),
    recordBroadcast: (orderId, txHash, now) =>
      write(async (client) => {
        const { rowCount } = await client.query(
          "UPDATE order_captures SET broadcasts = broadcasts + 1, last_broadcast_at = $1, first_broadcast_at = COALESCE(first_broadcast_at, $1), send_started_at = COALESCE(send_started_at, $1), updated_at = $1 WHERE order_id = $2 AND tx_hash = $3",
          [now, orderId, txHash.toLowerCase()],
        );
        const capture = await get(client, orderId);
        if (rowCount === 1 && capture !== undefined)
          await markNonce(
            client,
            chainId,
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
    replace: (orderId, tx, now) =>
      write(async (client) => {
        await createPostgresOrders(client).get(orderId, true);
        const current = await mustGetCapture(client, orderId);
        await client.query(
          `UPDATE order_captures SET relayer = $1, relayer_nonce = $2, tx_hash = $3, raw_tx = $4, max_fee_per_gas = $5, max_priority_fee_per_gas = $6,
             replaced_tx_hashes = $7, broadcasts = 0, last_broadcast_at = NULL, first_broadcast_at = NULL, updated_at = $8 WHERE order_id = $9`,
          [
            tx.relayer.toLowerCase(),
            tx.relayerNonce,
            tx.txHash.toLowerCase(),
            tx.rawTx.toLowerCase(),
            tx.maxFeePerGas.toString(),
            tx.maxPriorityFeePerGas.toString(),
            JSON.stringify([...current.replacedTxHashes, current.txHash]),
            now,
            orderId,
          ],
        );
        await client.query(
          "UPDATE relayer_nonces SET tx_hash = $1, updated_at = $2 WHERE chain_id = $3 AND relayer = $4 AND nonce = $5 AND holder = $6",
          [
            tx.txHash.toLowerCase(),
            now,
            chainId,
            tx.relayer.toLowerCase(),
            tx.relayerNonce,
            captureHolder(orderId),
          ],
        );
        return mustGetCapture(client, orderId);
      }),
    abandon: (orderId, now, why = {}) =>
      write(async (client) => {
        const order = await mustGetOrder(client, orderId, true);
        const capture = await get(client, orderId);
        if (why.nonceUnused === true && capture !== undefined && capture.status === "sent")
          await releaseNonce(
            client,
            chainId,
            {
              relayer: capture.relayer,
              nonce: capture.relayerNonce,
              holder: captureHolder(orderId),
            },
            now,
          );
        await client.query(
          "UPDATE order_captures SET status = 'abandoned', updated_at = $1 WHERE order_id = $2 AND status = 'sent'",
          [now, orderId],
        );
        if (order.state !== "capturing") return order;
        assertTransition(order.state, "authorized", "relay", orderId);
        await client.query(
          "UPDATE orders SET state = 'authorized', updated_at = $1 WHERE id = $2",
          [now, orderId],
        );
        await transition(
          client,
          orderId,
          order.state,
          "authorized",
          why.cause ?? "capture_abandoned",
          now,
          why.txHash?.toLowerCase() ?? null,
        );
        return mustGetOrder(client, orderId, false);
      }),
    findOrder: (chainId, token, authorizer, nonce) =>
      read(async (client) => {
        const { rows } = await client.query(
          "SELECT id FROM orders WHERE chain_id = $1 AND token = $2 AND authorizer = $3 AND nonce = $4",
          [chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()],
        );
        return rows[0] === undefined
          ? undefined
          : createPostgresOrders(client).get(Number(rows[0].id));
      }),
    bindPaymentId: (next, now) =>
      write(async (client) => {
        await client.query(
          "INSERT INTO x402_payment_ids (payment_id, fingerprint, order_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (payment_id) DO NOTHING",
          [next.paymentId, next.fingerprint, next.orderId, now],
        );
        return (await binding(client, next.paymentId))!;
      }),
    getPaymentId: (paymentId) => read((client) => binding(client, paymentId)),
  };
}

type GasRow = {
  order_id: number | string;
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
