import type { Address, Hex, LocalAccount } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import {
  getTransactionReceipt,
  type TransactionReceiptSummary,
} from "../chain/transactionReceipt.js";
import { RetryableError } from "../errors/base.js";
import { CaptureNonceLostError, CaptureNotSentError } from "../errors/capture.js";
import type { CrashStep } from "../ops/crashPoint.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { CaptureIntent, Order } from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import { rpc } from "./cancelRelay.js";
import { replaceCapture } from "./captureFeeBump.js";
import type { CaptureTransactions } from "./captureTransactions.js";
import { PLAIN_SEND, type CaptureSyncSend } from "./captureSyncSend.js";
import type { SentReceipts } from "./sentReceipts.js";
import { readAuthorizationState } from "./tokenReads.js";

export type CaptureIntentSendDeps = {
  client: RpcClient;
  store: Store;
  transactions: CaptureTransactions;
  /** The signing key of a relayer address, when this process holds it. */
  accountFor: (relayer: Address) => LocalAccount | undefined;
  /**
   * A first send in one round trip where the node serves it (captureSyncSend.ts); the receipt it
   * brings is kept in `sentReceipts` for the wait. Without it every send is plain.
   */
  syncSend?: CaptureSyncSend | undefined;
  sentReceipts?: SentReceipts | undefined;
  crashPoint?: ((step: CrashStep) => void) | undefined;
  metrics?: Pick<Metrics, "captureBroadcasts"> | undefined;
  logger: Logger;
};

/** How an intent's bytes reach the node, and what a refused nonce means for the intent. */
export type CaptureIntentSend = {
  /**
   * Hands the intent's bytes to the node. Before the first send of an intent the store records
   * that a send started (claimSend): an intent abandoned meanwhile (x402 crash rule) is never sent.
   *
   * What holds the nonce when the node refuses it decides the rest; the invariant is that an
   * authorization is never live in two transactions at once:
   * - "nonce too low": some transaction with this nonce is included. If it is one of the intent's
   *   (a receipt) or the authorization is used at the pending view (ours, or anyone's capture or
   *   cancel), there is nothing to send: the indexer moves the order. Otherwise a transaction that
   *   is not the intent's took the nonce, and every transaction of the intent (all on this nonce)
   *   can never land: the intent is abandoned (CaptureNonceLostError) and a new capture may sign
   *   the authorization on a new nonce without two live transactions.
   * - "underpriced"/"replacement": a transaction on this nonce sits in the pool (our older one, or
   *   a foreign one): it is outbid on the same nonce, never moved to another.
   */
  sendIntent: (
    order: Order,
    capture: CaptureIntent,
    kind: "first" | "resend" | "replacement",
  ) => Promise<CaptureIntent>;
  /** The receipt of the intent's transaction or of one it replaced (only one of them can exist: they share a nonce). */
  landed: (
    capture: CaptureIntent,
  ) => Promise<{ txHash: Hex; receipt: TransactionReceiptSummary } | undefined>;
};

/** The capture relay's send step and its nonce rules (captureRelay.ts). */
export function createCaptureIntentSend(deps: CaptureIntentSendDeps): CaptureIntentSend {
  const { client, store, transactions, logger } = deps;

  async function landed(
    capture: CaptureIntent,
  ): Promise<{ txHash: Hex; receipt: TransactionReceiptSummary } | undefined> {
    for (const txHash of [capture.txHash, ...capture.replacedTxHashes].reverse()) {
      const receipt = await rpc("reading the capture's receipt", () =>
        getTransactionReceipt(client, txHash),
      );
      if (receipt !== null) return { txHash, receipt };
    }
    return undefined;
  }

  async function sendIntent(
    order: Order,
    capture: CaptureIntent,
    kind: "first" | "resend" | "replacement",
  ): Promise<CaptureIntent> {
    let intent = capture;
    if (
      intent.sendStartedAt === null &&
      !(await store.captures.claimSend(order.id, intent.txHash, Date.now()))
    )
      throw new CaptureNotSentError(
        `the capture of order ${order.id} was abandoned before it was sent; nothing was broadcast`,
      );
    for (let attempt = 0; ; attempt++) {
      // Only a capture's first send waits for its receipt: resends and replacements come from the
      // driver's pass over every live intent, which must not stand still for a node's timeout.
      const { outcome, method, seen } =
        attempt === 0 && kind === "first" && deps.syncSend !== undefined
          ? await deps.syncSend.send(intent.rawTx, intent.txHash, intent.relayer)
          : { outcome: await transactions.send(intent.rawTx), method: PLAIN_SEND, seen: undefined };
      if (outcome === "accepted" || outcome === "known") {
        deps.crashPoint?.("sent");
        // "known": a node has these bytes (a retry after a lost answer): a broadcast all the same,
        // so the driver fee-bumps it when stuck and gap filling sees the nonce taken.
        await store.captures.recordBroadcast(order.id, intent.txHash, Date.now());
        if (seen !== undefined) deps.sentReceipts?.put(order.id, seen);
        deps.metrics?.captureBroadcasts.inc({
          kind: attempt === 0 ? kind : "replacement",
          method,
        });
        logger.info({
          msg: "Sent capture",
          order_id: order.id,
          tx_hash: intent.txHash,
          relayer_nonce: intent.relayerNonce,
          kind,
          method,
          node_answer: outcome,
          receipt:
            seen === undefined ? "none" : seen.receipt.preconfirmed ? "preconfirmed" : "sealed",
        });
        return intent;
      }
      if (outcome === "nonce_used") {
        if ((await landed(intent)) !== undefined) return intent;
        if (
          await readAuthorizationState(
            client,
            order.token,
            order.authorizer,
            order.nonce,
            "pending",
          )
        )
          return intent;
        await store.captures.abandon(order.id, Date.now(), { cause: "capture_nonce_lost" });
        logger.error({
          msg: "Abandoned capture",
          order_id: order.id,
          tx_hash: intent.txHash,
          relayer_nonce: intent.relayerNonce,
          reason: "nonce taken by another transaction",
        });
        throw new CaptureNonceLostError(
          `relayer nonce ${intent.relayerNonce} of the capture of order ${order.id} (${intent.txHash}) was taken by another transaction and the authorization is unused; nothing of it can land: capture it again`,
        );
      }
      const account = deps.accountFor(intent.relayer);
      if (account === undefined || attempt > 0)
        throw new RetryableError(
          `relayer nonce ${intent.relayerNonce} of the capture of order ${order.id} (${intent.txHash}) is held by another pending transaction; the driver outbids it on the same nonce`,
        );
      intent = await replaceCapture({ store, transactions }, account, order, intent);
    }
  }

  return { sendIntent, landed };
}
