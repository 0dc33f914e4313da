import type { Hex } from "viem";
import type { TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import { RetryableError } from "../errors/base.js";
import { CancelRevertedError, CancelTimeoutError, OutOfGasError } from "../errors/cancel.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { createReceiptPoller } from "./receiptPoller.js";

/** How often the cancel polls for the receipt and new blocks while waiting for confirmations: a one-off command need not hurry. */
export const CONFIRMATION_POLL_INTERVAL_MS = 250;

/** A successful receipt in a canonical block, and the canonical head its confirmations were counted at. */
export type CanonicalReceipt = TransactionReceiptSummary & { head: bigint };

type Sent = { txHash: Hex; relayerNonce: number; gas: bigint };

/** What waiting for a sent transaction's confirmations takes (part of cancelRelay.ts CancelRelayDeps). */
export type ConfirmationWait = {
  /** The project's RPC client: retries, failover across rpc.http, redaction, the chain check. */
  client: RpcClient;
  /** Canonical blocks to wait for, the receipt's block included; a pre-confirmation counts for none. */
  confirmations: number;
  receiptTimeoutMs: number;
  pollingIntervalMs?: number;
  /** Called once when the node first shows the transaction pre-confirmed (zero block hash), not yet in a block. */
  onPreconfirmed?: (preconfirmed: { txHash: Hex; pendingBlockNumber: bigint }) => void;
};

/**
 * Waits until `txHash` has `deps.confirmations` canonical blocks (its own included) or the timeout passes.
 * A receipt with a zero block hash is a pre-confirmation (a Base Flashblocks node answers one before the
 * block exists): reported once through `onPreconfirmed`, counted as no confirmation. The receipt is read
 * again on every poll, and its block hash compared with the canonical block at its height, so a receipt
 * whose block was reorged away is not counted either. RPC failures while waiting are retried until the timeout.
 */
export async function waitForCanonicalReceipt(
  deps: ConfirmationWait,
  sent: Sent,
): Promise<CanonicalReceipt> {
  const poller = createReceiptPoller({
    client: deps.client,
    pollingIntervalMs: deps.pollingIntervalMs ?? CONFIRMATION_POLL_INTERVAL_MS,
  });
  const deadline = Date.now() + deps.receiptTimeoutMs;
  let reportedPreconfirmed = false;
  let lastSeen = "no receipt";
  let lastError: unknown;
  for (;;) {
    try {
      const seen = await poller.next([sent.txHash]);
      if (seen.kind === "preconfirmed") {
        lastSeen = `pre-confirmed in pending block ${seen.receipt.blockNumber}`;
        if (!reportedPreconfirmed)
          deps.onPreconfirmed?.({
            txHash: sent.txHash,
            pendingBlockNumber: seen.receipt.blockNumber,
          });
        reportedPreconfirmed = true;
      } else if (seen.kind === "orphaned")
        lastSeen = `in block ${seen.receipt.blockNumber}, no longer canonical`;
      else if (seen.kind === "canonical") {
        const { receipt, confirmations, head } = seen;
        lastSeen = `in block ${receipt.blockNumber} with ${confirmations} confirmation(s)`;
        if (receipt.status !== "success") {
          if (receipt.gasUsed >= sent.gas)
            throw new OutOfGasError(
              `${sent.txHash} ran out of gas (limit ${sent.gas}) in block ${receipt.blockNumber}`,
            );
          throw new CancelRevertedError(
            `${sent.txHash} reverted in block ${receipt.blockNumber}`,
            sent.txHash,
          );
        }
        if (confirmations >= deps.confirmations) return { ...receipt, head };
      }
    } catch (error) {
      if (!(error instanceof RetryableError)) throw error;
      lastError = error;
    }
    if (Date.now() >= deadline)
      throw new CancelTimeoutError(
        `sent ${sent.txHash} (relayer nonce ${sent.relayerNonce}) but saw no receipt with ${deps.confirmations} canonical confirmation(s) within ${deps.receiptTimeoutMs} ms (last seen: ${lastSeen}); it may still land: check it before sending again`,
        sent.txHash,
        { cause: lastError },
      );
  }
}
