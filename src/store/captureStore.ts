import type { Address, Hex } from "viem";
import type { CaptureIntent, CaptureStatus, CaptureTransaction, Order } from "./orderStates.js";

/**
 * Why an intent ended without its payment: the transition's cause (`capture_abandoned` when not
 * given), the transaction that reverted (`capture_reverted`), and `nonceUnused` when nothing was
 * ever broadcast with its relayer nonce, so the book releases the nonce in the same transaction.
 */
export type AbandonCause = {
  cause?: "capture_abandoned" | "capture_reverted" | "capture_nonce_lost" | "settle_never_sent";
  txHash?: Hex | undefined;
  nonceUnused?: boolean;
};

/** A capture's cost from its receipt; `effectiveGasPrice` null when the node's receipt omits it. */
export type CaptureGas = { gasUsed: bigint; effectiveGasPrice: bigint | null };

/** One paid capture's cost and its order's payee (lower-case), as the status page sums it. */
export type CaptureGasRow = {
  orderId: number;
  payee: Address;
  gasUsed: bigint;
  effectiveGasPrice: bigint | null;
};

/** A payment-identifier (x402 extension) bound to the payload it first came with, and the order it settled. */
export type PaymentIdBinding = { paymentId: string; fingerprint: string; orderId: number };

/**
 * The capture relay's side of the store (schema 12), on either backend. Every write is one
 * transaction that reads the order under the write lock, so two processes capturing the same order
 * are serialised: the second finds the first one's intent and sends nothing of its own.
 */
export type CaptureStore = {
  /**
   * Moves the order authorized → capturing and stores `transaction` with the intent, atomically. An
   * order that already has a live or landed intent is left as it is: that intent comes back with
   * `created: false`. Any other state is refused (OrderStateError), nothing stored. The nonce must
   * still be reserved for this order in the nonce book (it becomes `signed` there), else
   * NonceLapsedError. `owner`: the storing process (nonceBook.ts processOwner).
   */
  start: (
    orderId: number,
    transaction: CaptureTransaction,
    now: number,
    owner?: string,
  ) => Promise<{ order: Order; capture: CaptureIntent; created: boolean }>;
  get: (orderId: number) => Promise<CaptureIntent | undefined>;
  /** The intents the daemon drives: status `sent` and the order still capturing. */
  pending: () => Promise<Array<{ order: Order; capture: CaptureIntent }>>;
  /**
   * Intents whose order the chain moved to captured while no process recorded their gas (a
   * restart lost the wait that would have), changed at or after `since` (unix ms): status `sent`
   * or `landed`, gas NULL (schema 18 indexes them by `updated_at`).
   */
  capturedWithoutGas: (since: number) => Promise<Array<{ order: Order; capture: CaptureIntent }>>;
  /**
   * Records, before the current bytes are first handed to a node, that this process is sending them:
   * true unless the intent was abandoned (or replaced) meanwhile, when nothing must be sent.
   */
  claimSend: (orderId: number, txHash: Hex, now: number) => Promise<boolean>;
  /** Counts one hand-over of the current bytes to the node (an answer "already known" counts too); the book marks the nonce broadcast. */
  recordBroadcast: (orderId: number, txHash: Hex, now: number) => Promise<void>;
  /**
   * What the capture cost, from the receipt that showed the payment (schema 17): gas used and the
   * effective gas price (wei per gas) of `txHash`, the intent's transaction or one it replaced.
   */
  recordGas: (orderId: number, txHash: Hex, gas: CaptureGas, now: number) => Promise<void>;
  /** The `limit` latest captures (by order id) with recorded gas, newest first. */
  recentGas: (limit: number) => Promise<CaptureGasRow[]>;
  /** A new signed transaction for the intent (a fee bump on the same nonce, or a new nonce); the old hash is kept in `replacedTxHashes`. */
  replace: (
    orderId: number,
    transaction: CaptureTransaction,
    now: number,
  ) => Promise<CaptureIntent>;
  /**
   * The intent ends and a capturing order goes back to authorized: the node refused the transaction
   * for good (cause `capture_abandoned`), it reverted on chain (`capture_reverted`, with its hash),
   * its nonce went to another transaction (`capture_nonce_lost`), or (x402) it was never sent and
   * its caller is gone (`settle_never_sent`, with `nonceUnused`).
   */
  abandon: (orderId: number, now: number, why?: AbandonCause) => Promise<Order>;
  /** The order holding this authorization, if any (addresses and nonce compared lower-case). */
  findOrder: (
    chainId: number,
    token: Address,
    authorizer: Address,
    nonce: Hex,
  ) => Promise<Order | undefined>;
  /** Binds a payment id to a fingerprint and order unless it is bound already; returns the binding that holds. */
  bindPaymentId: (binding: PaymentIdBinding, now: number) => Promise<PaymentIdBinding>;
  getPaymentId: (paymentId: string) => Promise<PaymentIdBinding | undefined>;
};

/** Row of `order_captures` (schema 12). */
export type CaptureRow = {
  order_id: number;
  relayer: Address;
  relayer_nonce: number;
  tx_hash: Hex;
  raw_tx: Hex;
  max_fee_per_gas: string;
  max_priority_fee_per_gas: string;
  replaced_tx_hashes: string;
  status: CaptureStatus;
  broadcasts: number;
  last_broadcast_at: number | null;
  first_broadcast_at: number | null;
  created_at: number;
  updated_at: number;
  owner: string | null;
  send_started_at: number | null;
  /** Schema 17; absent in rows read without the columns. */
  gas_used?: string | null;
  effective_gas_price?: string | null;
};

/** Maps a row of `order_captures` (either backend's column names) to the intent. */
export function toCaptureIntent(row: CaptureRow): CaptureIntent {
  return {
    orderId: Number(row.order_id),
    relayer: row.relayer,
    relayerNonce: Number(row.relayer_nonce),
    txHash: row.tx_hash,
    rawTx: row.raw_tx,
    maxFeePerGas: BigInt(row.max_fee_per_gas),
    maxPriorityFeePerGas: BigInt(row.max_priority_fee_per_gas),
    replacedTxHashes: JSON.parse(row.replaced_tx_hashes) as Hex[],
    status: row.status,
    broadcasts: Number(row.broadcasts),
    lastBroadcastAt: row.last_broadcast_at === null ? null : Number(row.last_broadcast_at),
    firstBroadcastAt: row.first_broadcast_at === null ? null : Number(row.first_broadcast_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    owner: row.owner ?? null,
    sendStartedAt:
      row.send_started_at === null || row.send_started_at === undefined
        ? null
        : Number(row.send_started_at),
    gasUsed: row.gas_used === null || row.gas_used === undefined ? null : BigInt(row.gas_used),
    effectiveGasPrice:
      row.effective_gas_price === null || row.effective_gas_price === undefined
        ? null
        : BigInt(row.effective_gas_price),
  };
}
