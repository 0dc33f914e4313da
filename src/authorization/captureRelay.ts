import { getAddress, isAddressEqual, keccak256, parseTransaction, type Hex, type LocalAccount } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import { getTransactionReceipt, type TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import { BaseError, RetryableError, UsageError } from "../errors/base.js";
import {
  CaptureFundsError,
  CaptureMismatchError,
  CaptureNonceLostError,
  CaptureNotSentError,
  CaptureRevertedError,
  CaptureTimeoutError,
  ReceivePayeeError,
} from "../errors/capture.js";
import { RpcRequestError } from "../errors/rpc.js";
import type { Logger } from "../ops/logger.js";
import type { CrashStep } from "../ops/crashPoint.js";
import type { Metrics } from "../ops/metrics.js";
import { assertTransition, OrderNotFoundError, type CaptureIntent, type CaptureTransaction, type Order } from "../store/orderStates.js";
import { captureHolder } from "../store/nonceBook.js";
import type { Store } from "../store/store.js";
import { parseBaseFee, parseQuantity, revertReason, rpc } from "./cancelRelay.js";
import { RELAYER_KEY_ENV } from "./keySources.js";
import { judgeCaptureReceipt } from "./captureReceipt.js";
import { createRelayerGaps, type SendOutcome } from "./relayerGaps.js";
import { createRelayerNonces } from "./relayerNonces.js";
import { createReceiptPoller, type ReceiptStanding } from "./receiptPoller.js";
import { simulateCapture, type CaptureCall } from "./simulateCapture.js";
import { readAuthorizationState } from "./tokenReads.js";

/** Headroom over eth_estimateGas for the gas limit, in percent. */
const GAS_LIMIT_HEADROOM_PERCENT = 20n;
/** maxFeePerGas = base fee × this + priority fee: room for the base fee to rise for a few blocks. */
const BASE_FEE_MULTIPLIER = 2n;
/** A replacement's fees over the replaced one's, in percent: nodes refuse a replacement under +10% on either fee. */
const REPLACEMENT_FEE_BUMP_PERCENT = 25n;
/** A capture not pre-confirmed this long after it was sent is replaced (Base pre-confirms within a flashblock, ~200 ms). */
export const CAPTURE_REPLACE_AFTER_MS = 10_000;
/** How often a wait hands the intent to the driver (re-send, replacement). */
const DRIVE_DURING_WAIT_MS = 1_000;
/**
 * Another process's x402 intent that no send was started for is left alone this long (ms) before
 * it is abandoned: its process stores and claims the send within milliseconds when alive.
 */
export const UNSENT_SETTLE_GRACE_MS = 5_000;

export type CaptureRelayDeps = {
  client: RpcClient;
  store: Store;
  chainId: number;
  /** Signs new and replacement transactions; without one the relay can only re-send stored bytes. */
  relayer: LocalAccount | undefined;
  /** This process's name in the nonce book and on the intents it stores (nonceBook.ts processOwner by default). */
  owner?: string | undefined;
  /** Test-only (ops/crashPoint.ts): called at each step of a capture, where a kill -9 test stops the process. */
  crashPoint?: ((step: CrashStep) => void) | undefined;
  logger: Logger;
  metrics?: Pick<Metrics, "captureBroadcasts" | "relayerBalance" | "relayerNonceGap"> | undefined;
  replaceAfterMs?: number | undefined;
  /** How often waits read receipts (receiptPoller.ts RECEIPT_POLL_INTERVAL_MS by default). */
  pollingIntervalMs?: number | undefined;
};

export type CaptureSent = { order: Order; txHash: Hex; alreadySent: boolean };

/** What a wait saw: the transaction (the current one or one it replaced), and how far it got. */
export type CaptureSeen = { txHash: Hex; status: "preconfirmed" | "confirmed"; blockNumber: bigint; confirmations: number };

export type CaptureRelay = {
  /**
   * Captures a stored order: simulates the token call from the relayer, signs the transaction, moves
   * the order to capturing with the signed bytes in one transaction, then sends them. An order that
   * already has an intent gets no new transaction: its stored one is sent again if the node lost it,
   * and returned with `alreadySent`. `suffix`: ERC-8021 bytes appended to the calldata.
   */
  capture: (orderId: number, options?: { suffix?: Hex | undefined }) => Promise<CaptureSent>;
  /**
   * Waits until the order's capture is pre-confirmed (confirmations 0) or in that many canonical
   * blocks, with a receipt that shows the payment (status success, the authorization's
   * AuthorizationUsed, its Transfer). A revert throws CaptureRevertedError (the order goes back to
   * authorized, cause `capture_reverted`); a success without those events CaptureMismatchError.
   */
  waitFor: (orderId: number, options: { confirmations: number; timeoutMs: number; signal?: AbortSignal | undefined }) => Promise<CaptureSeen>;
  /** One pass over the live intents (the daemon's): re-send what the node lost, replace what is stuck, fill a nonce gap. `now` in unix ms. */
  drive: (now: number) => Promise<{ resent: number; replaced: number }>;
};

/** The capture relay: one per process, shared by `order capture`, the daemon's driver and the facilitator. */
export function createCaptureRelay(deps: CaptureRelayDeps): CaptureRelay {
  const { client, store, relayer } = deps;
  const relayerNonces = createRelayerNonces({ client, book: store.nonces, owner: deps.owner });
  const { owner } = relayerNonces;
  const logger = deps.logger.child({ component: "capture" });
  const replaceAfterMs = deps.replaceAfterMs ?? CAPTURE_REPLACE_AFTER_MS;
  const poller = createReceiptPoller({ client, pollingIntervalMs: deps.pollingIntervalMs });
  /** Orders a drive step is working on in this process: one step at a time per order. */
  const busy = new Set<number>();
  /**
   * Orders whose capture() this process is running (how many calls), from storing the intent to
   * its first send: the driver leaves their unsent intents alone. Counted from before the store's
   * write, so a driver tick between the commit and its answer cannot take the intent for a crash's.
   */
  const settling = new Map<number, number>();
  const enter = (orderId: number) => settling.set(orderId, (settling.get(orderId) ?? 0) + 1);
  const leave = (orderId: number) => {
    const left = (settling.get(orderId) ?? 1) - 1;
    if (left === 0) settling.delete(orderId);
    else settling.set(orderId, left);
  };

  function needRelayer(): LocalAccount {
    if (relayer === undefined) throw new UsageError(`no relayer key: set ${RELAYER_KEY_ENV} (facilitator.relayerKeyEnv), facilitator.relayerKeyFile, or pass --relayer-key-file`);
    return relayer;
  }

  async function fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const [latest, priority] = await rpc("reading fees", () =>
      Promise.all([client.request("eth_getBlockByNumber", ["latest", false], parseBaseFee), client.request("eth_maxPriorityFeePerGas", [], parseQuantity)]),
    );
    return { maxFeePerGas: latest.baseFeePerGas * BASE_FEE_MULTIPLIER + priority, maxPriorityFeePerGas: priority };
  }

  /** Signs `data` to the token with `nonce`, or with one reserved now in the nonce book for this order. */
  async function sign(order: Order, data: Hex, gas: bigint, nonce: number | undefined, fee: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }): Promise<CaptureTransaction> {
    const account = needRelayer();
    const relayerNonce = nonce ?? (await relayerNonces.reserve(account.address, captureHolder(order.id)));
    try {
      const rawTx = await account.signTransaction({ type: "eip1559", chainId: deps.chainId, to: order.token, data, gas, nonce: relayerNonce, ...fee });
      return { relayer: account.address, relayerNonce, txHash: keccak256(rawTx), rawTx, ...fee };
    } catch (error) {
      if (nonce === undefined) await relayerNonces.release(account.address, relayerNonce, captureHolder(order.id));
      throw error;
    }
  }

  async function send(rawTx: Hex): Promise<SendOutcome> {
    try {
      await rpc("sending the capture", () => client.request("eth_sendRawTransaction", [rawTx]));
      return "accepted";
    } catch (error) {
      // Note: anvil answers a re-sent transaction with code -32003 "transaction already imported",
      // which the RPC client takes for a temporary failure: the node's words decide, whatever the class.
      const message = messagesOf(error);
      if (/already known|known transaction|already imported|already exists|already in (?:the )?pool/i.test(message)) return "known";
      if (/nonce too low|nonce has already been used|old nonce/i.test(message)) return "nonce_used";
      if (/underpriced|replacement/i.test(message)) return "nonce_taken";
      if (/insufficient funds/i.test(message)) throw new CaptureFundsError(`the relayer lacks the ETH for gas (${message}); nothing was sent`, { cause: error });
      throw error;
    }
  }

  const gaps = createRelayerGaps({ store, relayerNonces, chainId: deps.chainId, replaceAfterMs, logger, fees, send });

  /** The receipt of the intent's transaction or of one it replaced (only one of them can exist: they share a nonce). */
  async function landed(capture: CaptureIntent): Promise<{ txHash: Hex; receipt: TransactionReceiptSummary } | undefined> {
    for (const txHash of [capture.txHash, ...capture.replacedTxHashes].reverse()) {
      const receipt = await rpc("reading the capture's receipt", () => getTransactionReceipt(client, txHash));
      if (receipt !== null) return { txHash, receipt };
    }
    return undefined;
  }

  /**
   * A replacement for the intent: same calldata, gas and relayer nonce, higher fees. Never another
   * nonce: two nonces could both land, and the second reverts or (for a stale view) is taken for
   * the outcome. One nonce means at most one of the intent's transactions can ever land.
   */
  async function resign(order: Order, capture: CaptureIntent): Promise<CaptureIntent> {
    const previous = parseTransaction(capture.rawTx);
    const current = await fees();
    const bump = (value: bigint) => value + (value * REPLACEMENT_FEE_BUMP_PERCENT) / 100n + 1n;
    const fee = { maxFeePerGas: max(current.maxFeePerGas, bump(capture.maxFeePerGas)), maxPriorityFeePerGas: max(current.maxPriorityFeePerGas, bump(capture.maxPriorityFeePerGas)) };
    const next = await sign(order, previous.data!, previous.gas!, capture.relayerNonce, fee);
    return store.captures.replace(order.id, next, Date.now());
  }

  /**
   * Hands the intent's bytes to the node. Before the first send of an intent the store records that
   * a send started (claimSend): an intent abandoned meanwhile (x402 crash rule) is never sent.
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
  async function sendIntent(order: Order, capture: CaptureIntent, kind: "first" | "resend" | "replacement"): Promise<CaptureIntent> {
    let intent = capture;
    if (intent.sendStartedAt === null && !(await store.captures.claimSend(order.id, intent.txHash, Date.now())))
      throw new CaptureNotSentError(`the capture of order ${order.id} was abandoned before it was sent; nothing was broadcast`);
    for (let attempt = 0; ; attempt++) {
      const outcome = await send(intent.rawTx);
      if (outcome === "accepted" || outcome === "known") {
        deps.crashPoint?.("sent");
        // "known": a node has these bytes (a retry after a lost answer): a broadcast all the same,
        // so the driver fee-bumps it when stuck and gap filling sees the nonce taken.
        await store.captures.recordBroadcast(order.id, intent.txHash, Date.now());
        deps.metrics?.captureBroadcasts.inc({ kind: attempt === 0 ? kind : "replacement" });
        logger.info({ msg: "Sent capture", order_id: order.id, tx_hash: intent.txHash, relayer_nonce: intent.relayerNonce, kind, node_answer: outcome });
        return intent;
      }
      if (outcome === "nonce_used") {
        if ((await landed(intent)) !== undefined) return intent;
        if (await readAuthorizationState(client, order.token, order.authorizer, order.nonce, "pending")) return intent;
        await store.captures.abandon(order.id, Date.now(), { cause: "capture_nonce_lost" });
        logger.error({ msg: "Abandoned capture", order_id: order.id, tx_hash: intent.txHash, relayer_nonce: intent.relayerNonce, reason: "nonce taken by another transaction" });
        throw new CaptureNonceLostError(
          `relayer nonce ${intent.relayerNonce} of the capture of order ${order.id} (${intent.txHash}) was taken by another transaction and the authorization is unused; nothing of it can land: capture it again`,
        );
      }
      if (relayer === undefined || attempt > 0 || !isAddressEqual(relayer.address, intent.relayer))
        throw new RetryableError(`relayer nonce ${intent.relayerNonce} of the capture of order ${order.id} (${intent.txHash}) is held by another pending transaction; the driver outbids it on the same nonce`);
      intent = await resign(order, intent);
    }
  }

  /** One drive step for one live intent. */
  async function driveOne(order: Order, capture: CaptureIntent, now: number): Promise<"resent" | "replaced" | "none"> {
    if (now / 1000 >= order.validBefore) return "none"; // the expiry pass ends it
    const seen = await landed(capture);
    if (seen !== undefined) {
      if (seen.receipt.status === "reverted" && !seen.receipt.preconfirmed) {
        const used = await readAuthorizationState(client, order.token, order.authorizer, order.nonce);
        if (!used) {
          logger.error({ msg: "Abandoned capture", order_id: order.id, tx_hash: seen.txHash, reason: "reverted on chain, authorization still unused" });
          await store.captures.abandon(order.id, now, { cause: "capture_reverted", txHash: seen.txHash });
        }
      }
      return "none";
    }
    if (capture.sendStartedAt === null && order.source === "x402") return abandonUnsent(order, capture, now);
    // Used by another transaction, or canceled: the indexer moves the order when it sees the event.
    if (await readAuthorizationState(client, order.token, order.authorizer, order.nonce, "pending")) return "none";
    const stuck = capture.lastBroadcastAt !== null && now - capture.lastBroadcastAt >= replaceAfterMs;
    if (stuck && relayer !== undefined && isAddressEqual(relayer.address, capture.relayer)) {
      const replacement = await resign(order, capture);
      logger.warn({ msg: "Replaced capture", order_id: order.id, replaced_tx_hash: capture.txHash, tx_hash: replacement.txHash, waited_ms: now - capture.lastBroadcastAt! });
      await sendIntent(order, replacement, "replacement");
      return "replaced";
    }
    const before = capture.broadcasts;
    const after = await sendIntent(order, capture, "resend");
    return after.txHash !== capture.txHash || after.broadcasts !== before ? "resent" : "none";
  }

  /**
   * The crash rule for x402 (docs/x402.md): a settle's intent that no send was started for has no
   * caller waiting for it unless this process is settling it right now; after a crash its caller
   * got an error (and may have paid again with a new authorization), so its bytes are never sent.
   * The intent is abandoned and its nonce released in one transaction: no gap is left. Another
   * live process's intent is given UNSENT_SETTLE_GRACE_MS to claim its send first.
   */
  async function abandonUnsent(order: Order, capture: CaptureIntent, now: number): Promise<"none"> {
    if (settling.has(order.id)) return "none";
    if (capture.owner !== owner && now - capture.createdAt < UNSENT_SETTLE_GRACE_MS) return "none";
    await store.captures.abandon(order.id, now, { nonceUnused: true, cause: "settle_never_sent" });
    logger.warn({ msg: "Abandoned unsent settle", order_id: order.id, tx_hash: capture.txHash, relayer_nonce: capture.relayerNonce, stored_by: capture.owner });
    return "none";
  }

  /**
   * Throws unless `receipt` (pre-confirmed or sealed) shows the order's payment. A revert ends the
   * intent (its relayer nonce is spent, nothing of it can land any more): the order goes back to
   * authorized with cause `capture_reverted`, and the indexer moves it on if a cancel or another
   * transaction used the nonce. A success without the payment's events is refused, the intent left
   * to the indexer and the driver.
   */
  async function judgeSeen(order: Order, txHash: Hex, receipt: TransactionReceiptSummary): Promise<void> {
    const verdict = judgeCaptureReceipt(receipt, { token: order.token, authorizer: order.authorizer, payee: order.payee, value: BigInt(order.value), nonce: order.nonce });
    if (verdict.kind === "paid") return;
    const where = receipt.preconfirmed ? `pre-confirmed for block ${receipt.blockNumber}` : `in block ${receipt.blockNumber}`;
    if (verdict.kind === "mismatch") {
      logger.error({ msg: "Refused capture receipt", order_id: order.id, tx_hash: txHash, reason: `no ${verdict.missing}` });
      throw new CaptureMismatchError(`${txHash} for order ${order.id} succeeded ${where} without ${verdict.missing}: the chain did not make this payment`, txHash);
    }
    logger.warn({ msg: "Abandoned capture", order_id: order.id, tx_hash: txHash, reason: `reverted ${where}` });
    await store.captures.abandon(order.id, Date.now(), { cause: "capture_reverted", txHash });
    throw new CaptureRevertedError(`${txHash} for order ${order.id} reverted ${where}: nothing was paid`, "reverted on chain", txHash);
  }

  async function driveGuarded(order: Order, capture: CaptureIntent, now: number): Promise<"resent" | "replaced" | "none"> {
    if (busy.has(order.id)) return "none";
    busy.add(order.id);
    try {
      return await driveOne(order, capture, now);
    } finally {
      busy.delete(order.id);
    }
  }

  return {
    async capture(orderId, options = {}) {
      let order = await store.getOrder(orderId);
      if (order === undefined) throw new OrderNotFoundError(`no order ${orderId}`);
      const existing = await store.captures.get(orderId);
      if (existing !== undefined && existing.status !== "abandoned") {
        if (existing.status === "sent" && order.state === "capturing") await driveGuarded(order, existing, Date.now());
        const current = (await store.captures.get(orderId)) ?? existing;
        const now = (await store.getOrder(orderId)) ?? order;
        // An x402 intent a crash left unsent was just abandoned (crash rule): this caller is here
        // and waiting, so the payment is captured afresh below, on a nonce of its own.
        if (current.status !== "abandoned") return { order: now, txHash: current.txHash, alreadySent: true };
        order = now;
      }
      assertTransition(order.state, "capturing", "relay", orderId);
      const account = needRelayer();
      if (order.kind === "receive" && !isAddressEqual(account.address, order.payee))
        throw new ReceivePayeeError(
          `order ${orderId} is a receiveWithAuthorization, which the token accepts only from the payee ${getAddress(order.payee)}; the relayer key is ${account.address}'s. Nothing was sent`,
        );
      const { data } = await simulateCapture(client, callOf(order), account.address, { suffix: options.suffix });
      const estimate = await rpc("estimating the capture's gas", () =>
        // `pending`, as verify and the simulation read: a payer funded by a pre-confirmed transfer
        // must not pass verify and fail here (geth and reth estimate at `latest` without a tag).
        client.request("eth_estimateGas", [{ from: account.address, to: order.token, data }, "pending"], parseQuantity),
      ).catch((error: unknown) => {
        if (!(error instanceof RpcRequestError)) throw error;
        const reason = revertReason(error);
        throw new CaptureRevertedError(`the gas estimate of the capture of order ${orderId} reverted: ${reason}; nothing was sent`, reason, undefined, { cause: error });
      });
      const tx = await sign(order, data, estimate + (estimate * GAS_LIMIT_HEADROOM_PERCENT) / 100n, undefined, await fees());
      deps.crashPoint?.("signed");
      let started: Awaited<ReturnType<Store["captures"]["start"]>>;
      const holder = captureHolder(orderId);
      enter(orderId);
      try {
        try {
          started = await store.captures.start(orderId, tx, Date.now(), owner);
        } catch (error) {
          await relayerNonces.release(tx.relayer, tx.relayerNonce, holder);
          throw error;
        }
        if (!started.created) {
          // Another call started this capture first: its transaction is the one. Racing calls for one
          // order share one reserved nonce (nonceBook.ts), so there is usually nothing to give back;
          // a nonce of our own goes back to the book, which hands it out before any new one: no gap.
          if (started.capture.relayerNonce !== tx.relayerNonce || !isAddressEqual(started.capture.relayer, tx.relayer))
            await relayerNonces.release(tx.relayer, tx.relayerNonce, holder);
          return { order: started.order, txHash: started.capture.txHash, alreadySent: true };
        }
        deps.crashPoint?.("stored");
        const sent = await sendIntent(started.order, started.capture, "first");
        return { order: started.order, txHash: sent.txHash, alreadySent: false };
      } catch (error) {
        // The node refused the bytes: nothing was broadcast with the nonce, the book reuses it.
        if (error instanceof CaptureFundsError) await store.captures.abandon(orderId, Date.now(), { nonceUnused: true });
        throw error;
      } finally {
        leave(orderId);
      }
    },

    async waitFor(orderId, { confirmations, timeoutMs, signal }) {
      const deadline = Date.now() + timeoutMs;
      let lastDrive = Date.now();
      let lastSeen = "no receipt";
      const order = await store.getOrder(orderId);
      if (order === undefined) throw new OrderNotFoundError(`no order ${orderId}`);
      for (;;) {
        const capture = await store.captures.get(orderId);
        if (capture === undefined) throw new OrderNotFoundError(`order ${orderId} has no capture`);
        // Only one of them can have a receipt: they share a nonce.
        const seen = await poller.next([capture.txHash, ...capture.replacedTxHashes], signal).catch((error: unknown): ReceiptStanding => {
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
          if (confirmations === 0) return { txHash: seen.txHash, status: "preconfirmed", blockNumber: seen.receipt.blockNumber, confirmations: 0 };
        } else if (seen.kind === "canonical") {
          const { receipt } = seen;
          lastSeen = `in block ${receipt.blockNumber} with ${seen.confirmations} confirmation(s)`;
          if (seen.confirmations >= confirmations) return { txHash: seen.txHash, status: "confirmed", blockNumber: receipt.blockNumber, confirmations: seen.confirmations };
        } else if (seen.kind === "orphaned") lastSeen = `in block ${seen.receipt.blockNumber}, no longer canonical`;
        else if (Date.now() - lastDrive >= DRIVE_DURING_WAIT_MS) {
          lastDrive = Date.now();
          const current = await store.getOrder(orderId);
          if (current?.state === "capturing" && capture.status === "sent") await driveGuarded(current, capture, Date.now()).catch((error: unknown) => logDriveError(orderId, error));
        }
        if (Date.now() >= deadline)
          throw new CaptureTimeoutError(
            `sent ${capture.txHash} for order ${orderId} but did not see it ${confirmations === 0 ? "pre-confirmed" : `in ${confirmations} canonical block(s)`} within ${timeoutMs} ms (last seen: ${lastSeen}); it is stored and may still land: run the capture again, it sends nothing new`,
            capture.txHash,
          );
      }
    },

    async drive(now) {
      const pending = await store.captures.pending();
      let resent = 0;
      let replaced = 0;
      for (const { order, capture } of pending) {
        const done = await driveGuarded(order, capture, now).catch((error: unknown) => (logDriveError(order.id, error), "none" as const));
        if (done === "resent") resent++;
        if (done === "replaced") replaced++;
      }
      if (relayer !== undefined) {
        await relayerNonces
          .pendingCount(relayer.address)
          .then(async (count) => {
            await gaps.releaseGone(relayer, count, now);
            await gaps.fill(relayer, pending.map((p) => p.capture), count, now);
          })
          .catch((error: unknown) => logDriveError(0, error));
        if (deps.metrics !== undefined) await reportRelayer(relayer, pending.map((p) => p.capture)).catch(() => undefined);
      }
      return { resent, replaced };
    },
  };

  async function reportRelayer(account: LocalAccount, live: CaptureIntent[]): Promise<void> {
    const [balance, pending] = await Promise.all([
      client.request("eth_getBalance", [account.address, "latest"], parseQuantity),
      client.request("eth_getTransactionCount", [account.address, "pending"], parseQuantity),
    ]);
    deps.metrics?.relayerBalance.set(Number(balance));
    deps.metrics?.relayerNonceGap.set(live.filter((c) => isAddressEqual(c.relayer, account.address) && BigInt(c.relayerNonce) >= pending).length);
  }

  function logDriveError(orderId: number, error: unknown): void {
    logger.warn({ msg: "Failed to drive capture", order_id: orderId, error: error instanceof Error ? error.message : String(error) });
  }
}

/** The token call an order stands for. */
export function callOf(order: Order): CaptureCall {
  return {
    token: order.token,
    kind: order.kind,
    from: order.authorizer,
    to: order.payee,
    value: BigInt(order.value),
    validAfter: BigInt(order.validAfter),
    validBefore: BigInt(order.validBefore),
    nonce: order.nonce,
    signature: order.signature,
  };
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** The messages of an error and of its causes, joined: a node's reason may sit under a retry wrapper. */
function messagesOf(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error; e instanceof Error && parts.length < 8; e = e.cause) parts.push(e instanceof BaseError ? e.shortMessage : e.message);
  return parts.join(" <- ");
}
