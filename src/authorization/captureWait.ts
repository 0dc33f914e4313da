import type { Hex } from "viem";
import type { TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import { RetryableError } from "../errors/base.js";
import {
  CaptureMismatchError,
  CaptureRevertedError,
  CaptureTimeoutError,
} from "../errors/capture.js";
import type { CrashStep } from "../ops/crashPoint.js";
import type { Logger } from "../ops/logger.js";
import { OrderNotFoundError, type CaptureIntent, type Order } from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import { judgeCaptureReceipt } from "./captureReceipt.js";
import type { ReceiptPoller, ReceiptStanding } from "./receiptPoller.js";
import type { SentReceipts } from "./sentReceipts.js";

/** How often a wait hands the intent to the driver (re-send, replacement). */
const DRIVE_DURING_WAIT_MS = 1_000;
/**
 * A wait that has seen no receipt this long asks less often: Base pre-confirms within a flashblock
 * (200 ms), so a transaction unseen for 2 s is delayed or stuck, and a stuck relayer's waits
 * polling every 50 ms (the poller's tick) turned into thousands of receipt reads a second.
 */
const SLOW_POLL_AFTER_MS = 2_000;
/** The longest pause between two polls of a slow wait. */
const SLOW_POLL_MAX_MS = 1_000;

/** What a wait saw: the transaction (the current one or one it replaced), and how far it got. */
export type CaptureSeen = {
  txHash: Hex;
  status: "preconfirmed" | "confirmed";
  blockNumber: bigint;
  confirmations: number;
};

export type CaptureWaitOptions = {
  confirmations: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
};

export type CaptureWaitDeps = {
  store: Store;
  poller: ReceiptPoller;
  /** Receipts that came with the send (eth_sendRawTransactionSync, or the poller hedging it). */
  sentReceipts?: SentReceipts | undefined;
  /** One drive step for the intent while nothing is seen (captureRelay.ts); its errors are the caller's to log. */
  drive: (order: Order, capture: CaptureIntent) => Promise<void>;
  /** Called once a receipt is judged to show the payment, before the wait answers (gas accounting). */
  onPaid?:
    ((order: Order, txHash: Hex, receipt: TransactionReceiptSummary) => Promise<void>) | undefined;
  crashPoint?: ((step: CrashStep) => void) | undefined;
  logger: Logger;
};

/**
 * The capture relay's wait (captureRelay.ts waitFor): starts from the receipt its send brought, if
 * any, then reads the intent's receipts on the shared poller until one is pre-confirmed or deep
 * enough and shows the payment, driving the intent every DRIVE_DURING_WAIT_MS while none is seen.
 */
export function createCaptureWait(deps: CaptureWaitDeps) {
  const { store, poller, logger } = deps;

  /**
   * Throws unless `receipt` (pre-confirmed or sealed) shows the order's payment. A revert ends the
   * intent (its relayer nonce is spent, nothing of it can land any more): the order goes back to
   * authorized with cause `capture_reverted`, and the indexer moves it on if a cancel or another
   * transaction used the nonce. A success without the payment's events is refused, the intent left
   * to the indexer and the driver.
   */
  async function judgeSeen(
    order: Order,
    txHash: Hex,
    receipt: TransactionReceiptSummary,
  ): Promise<void> {
    const verdict = judgeCaptureReceipt(receipt, {
      token: order.token,
      authorizer: order.authorizer,
      payee: order.payee,
      value: BigInt(order.value),
      nonce: order.nonce,
    });
    if (verdict.kind === "paid") {
      await deps.onPaid?.(order, txHash, receipt);
      return;
    }
    const where = receipt.preconfirmed
      ? `pre-confirmed for block ${receipt.blockNumber}`
      : `in block ${receipt.blockNumber}`;
    if (verdict.kind === "mismatch") {
      logger.error({
        msg: "Refused capture receipt",
        order_id: order.id,
        tx_hash: txHash,
        reason: `no ${verdict.missing}`,
      });
      throw new CaptureMismatchError(
        `${txHash} for order ${order.id} succeeded ${where} without ${verdict.missing}: the chain did not make this payment`,
        txHash,
      );
    }
    logger.warn({
      msg: "Abandoned capture",
      order_id: order.id,
      tx_hash: txHash,
      reason: `reverted ${where}`,
    });
    await store.captures.abandon(order.id, Date.now(), { cause: "capture_reverted", txHash });
    throw new CaptureRevertedError(
      `${txHash} for order ${order.id} reverted ${where}: nothing was paid`,
      "reverted on chain",
      txHash,
    );
  }

  /** The receipt the order's send brought, if of the current intent or one it replaced. */
  async function sentReceipt(orderId: number) {
    const sent = deps.sentReceipts?.take(orderId);
    if (sent === undefined) return undefined;
    const capture = await store.captures.get(orderId);
    const hashes = [capture?.txHash, ...(capture?.replacedTxHashes ?? [])];
    return hashes.some((h) => h?.toLowerCase() === sent.txHash.toLowerCase()) ? sent : undefined;
  }

  return async function waitFor(
    orderId: number,
    { confirmations, timeoutMs, signal }: CaptureWaitOptions,
  ): Promise<CaptureSeen> {
    const deadline = Date.now() + timeoutMs;
    let lastDrive = Date.now();
    let lastSeen = "no receipt";
    const order = await store.getOrder(orderId);
    if (order === undefined) throw new OrderNotFoundError(`no order ${orderId}`);
    const sent = await sentReceipt(orderId);
    if (sent !== undefined) {
      // Judged as a polled receipt is: a revert or a success without the payment ends the wait.
      await judgeSeen(order, sent.txHash, sent.receipt);
      deps.crashPoint?.("preconfirmed");
      const { preconfirmed, blockNumber } = sent.receipt;
      lastSeen = preconfirmed
        ? `pre-confirmed for block ${blockNumber}`
        : `in block ${blockNumber}`;
      // A sealed receipt from the node counts its own block; deeper waits read the chain.
      if (confirmations === 0)
        return {
          txHash: sent.txHash,
          status: preconfirmed ? "preconfirmed" : "confirmed",
          blockNumber,
          confirmations: preconfirmed ? 0 : 1,
        };
    }
    for (;;) {
      const capture = await store.captures.get(orderId);
      if (capture === undefined) throw new OrderNotFoundError(`order ${orderId} has no capture`);
      // Only one of them can have a receipt: they share a nonce.
      const seen = await poller
        .next([capture.txHash, ...capture.replacedTxHashes], signal)
        .catch((error: unknown): ReceiptStanding => {
          if (error instanceof RetryableError) return { kind: "none" };
          throw error;
        });
      // A receipt counts, pre-confirmed or sealed, only once it shows the payment itself.
      if (seen.kind === "preconfirmed" || seen.kind === "canonical") {
        await judgeSeen(order, seen.txHash, seen.receipt);
        // The chain shows the payment, the caller has no answer yet. A poll can miss a short
        // pre-confirmation and see the receipt sealed first: the step is the same one.
        deps.crashPoint?.("preconfirmed");
      }
      if (seen.kind === "preconfirmed") {
        lastSeen = `pre-confirmed for block ${seen.receipt.blockNumber}`;
        if (confirmations === 0)
          return {
            txHash: seen.txHash,
            status: "preconfirmed",
            blockNumber: seen.receipt.blockNumber,
            confirmations: 0,
          };
      } else if (seen.kind === "canonical") {
        const { receipt } = seen;
        lastSeen = `in block ${receipt.blockNumber} with ${seen.confirmations} confirmation(s)`;
        if (seen.confirmations >= confirmations)
          return {
            txHash: seen.txHash,
            status: "confirmed",
            blockNumber: receipt.blockNumber,
            confirmations: seen.confirmations,
          };
      } else if (seen.kind === "orphaned")
        lastSeen = `in block ${seen.receipt.blockNumber}, no longer canonical`;
      else if (Date.now() - lastDrive >= DRIVE_DURING_WAIT_MS) {
        lastDrive = Date.now();
        const current = await store.getOrder(orderId);
        if (current?.state === "capturing" && capture.status === "sent")
          await deps.drive(current, capture);
      }
      const waited = Date.now() - (deadline - timeoutMs);
      if (seen.kind === "none" && waited >= SLOW_POLL_AFTER_MS)
        await pause(Math.min(SLOW_POLL_MAX_MS, waited / 4, deadline - Date.now()), signal);
      if (Date.now() >= deadline)
        throw new CaptureTimeoutError(
          `sent ${capture.txHash} for order ${orderId} but did not see it ${confirmations === 0 ? "pre-confirmed" : `in ${confirmations} canonical block(s)`} within ${timeoutMs} ms (last seen: ${lastSeen}); it is stored and may still land: run the capture again, it sends nothing new`,
          capture.txHash,
        );
    }
  };
}

/** Resolves after `ms` (at once for none), or rejects with the signal's reason when it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(timer), reject(signal!.reason));
    const timer = setTimeout(() => (signal?.removeEventListener("abort", onAbort), resolve()), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
