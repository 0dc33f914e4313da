import { getAddress, type Address, type Hex, type LocalAccount } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import type { TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import { UsageError } from "../errors/base.js";
import { CaptureFundsError, CaptureTimeoutError, ReceivePayeeError } from "../errors/capture.js";
import type { Logger } from "../ops/logger.js";
import type { CrashStep } from "../ops/crashPoint.js";
import type { Metrics } from "../ops/metrics.js";
import {
  assertTransition,
  OrderNotFoundError,
  type CaptureIntent,
  type Order,
} from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import { replaceCapture } from "./captureFeeBump.js";
import { createCaptureIntentSend } from "./captureIntentSend.js";
import { createCaptureNonces } from "./captureNonces.js";
import { judgeCaptureReceipt } from "./captureReceipt.js";
import { createCaptureSyncSend, type SyncSendOptions } from "./captureSyncSend.js";
import { createCaptureTransactions } from "./captureTransactions.js";
import { createCaptureWait, type CaptureSeen } from "./captureWait.js";
import { RELAYER_KEY_ENV } from "./keySources.js";
import { createRelayerGaps } from "./relayerGaps.js";
import { createRelayerNonces } from "./relayerNonces.js";
import { createRelayerPool, type RelayerPool, type RelayerStanding } from "./relayerPool.js";
import { createReceiptPoller } from "./receiptPoller.js";
import { createSentReceipts } from "./sentReceipts.js";
import {
  captureCallData,
  captureOverload,
  estimateCapture,
  type CaptureCall,
  type CaptureOverload,
} from "./simulateCapture.js";
import { readAuthorizationState } from "./tokenReads.js";

export type { CaptureSeen } from "./captureWait.js";

/*
 * The capture relay in parts a reader can take one at a time:
 * - captureTransactions.ts: fees read, transactions signed, raw bytes sent (what the node said);
 * - captureFeeBump.ts: a stuck intent replaced on the same nonce with higher fees;
 * - captureIntentSend.ts: the send step, and what a refused nonce means for the intent;
 * - captureNonces.ts: a signed nonce stored with its intent or given back; each relayer's sequence tended;
 * - captureWait.ts: waiting for a receipt that shows the payment.
 * This file holds what ties them: capture(), the driver's step per intent, and the x402 crash rule.
 */

/** Headroom over eth_estimateGas for the gas limit, in percent. */
const GAS_LIMIT_HEADROOM_PERCENT = 20n;
/** A capture not pre-confirmed this long after it was sent is replaced (Base pre-confirms within a flashblock, ~200 ms). */
export const CAPTURE_REPLACE_AFTER_MS = 10_000;
/**
 * Another process's x402 intent that no send was started for is left alone this long (ms) before
 * it is abandoned: its process stores and claims the send within milliseconds when alive.
 */
export const UNSENT_SETTLE_GRACE_MS = 5_000;
/**
 * How far back (ms since a capture last changed: its last broadcast, or its event's finality,
 * ~15 min after on Base) the driver looks for captured orders without gas: a restart within the
 * hour records them; older ones, and every capture before schema 17, are left without.
 */
const CAPTURED_GAS_LOOKBACK_MS = 60 * 60_000;

export type CaptureRelayDeps = {
  client: RpcClient;
  store: Store;
  chainId: number;
  /** Signs new and replacement transactions; without one the relay can only re-send stored bytes. */
  relayer: LocalAccount | undefined;
  /** Several relayers (facilitator.relayers); when given, `relayer` is ignored. */
  pool?: RelayerPool | undefined;
  /** This process's name in the nonce book and on the intents it stores (nonceBook.ts processOwner by default). */
  owner?: string | undefined;
  /** Test-only (ops/crashPoint.ts): called at each step of a capture, where a kill -9 test stops the process. */
  crashPoint?: ((step: CrashStep) => void) | undefined;
  logger: Logger;
  metrics?:
    | Pick<
        Metrics,
        | "captureBroadcasts"
        | "relayerBalance"
        | "relayerNonceGap"
        | "relayerPendingCaptures"
        | "relayerStuck"
        | "captureGasUsed"
        | "captureGasCost"
      >
    | undefined;
  /**
   * The `payee` label of the gas metrics for a payee: bounded by the caller (the facilitator's
   * configured payTo, "other" for the rest), never the raw address of any payer's choice.
   */
  payeeLabel?: ((payee: Address) => string) | undefined;
  replaceAfterMs?: number | undefined;
  /** How often waits read receipts (receiptPoller.ts RECEIPT_POLL_INTERVAL_MS by default). */
  pollingIntervalMs?: number | undefined;
  /** First sends by eth_sendRawTransactionSync where the node serves it (captureSyncSend.ts); plain without. */
  sendSync?: SyncSendOptions | undefined;
};

export type CaptureSent = { order: Order; txHash: Hex; alreadySent: boolean };

/**
 * How a capture's transaction is made: `suffix`, ERC-8021 bytes appended to the calldata; the
 * token call `overload` and the `gas` estimate when the caller (the facilitator's verify) read
 * them moments ago, so they are not read again.
 */
export type CaptureOptions = {
  suffix?: Hex | undefined;
  overload?: CaptureOverload | undefined;
  gas?: bigint | undefined;
};

export type CaptureRelay = {
  /**
   * Captures a stored order: simulates the token call from the relayer, signs the transaction, moves
   * the order to capturing with the signed bytes in one transaction, then sends them. An order that
   * already has an intent gets no new transaction: its stored one is sent again if the node lost it,
   * and returned with `alreadySent`. `suffix`: ERC-8021 bytes appended to the calldata.
   */
  capture: (orderId: number, options?: CaptureOptions) => Promise<CaptureSent>;
  /**
   * Waits until the order's capture is pre-confirmed (confirmations 0) or in that many canonical
   * blocks, with a receipt that shows the payment (status success, the authorization's
   * AuthorizationUsed, its Transfer). A revert throws CaptureRevertedError (the order goes back to
   * authorized, cause `capture_reverted`); a success without those events CaptureMismatchError.
   */
  waitFor: (
    orderId: number,
    options: { confirmations: number; timeoutMs: number; signal?: AbortSignal | undefined },
  ) => Promise<CaptureSeen>;
  /** One pass over the live intents (the daemon's): re-send what the node lost, replace what is stuck, fill a nonce gap. `now` in unix ms. */
  drive: (now: number) => Promise<{ resent: number; replaced: number }>;
  /** The relayer pool as this process sees it (relayerPool.ts), for the status page. */
  standings: (now: number) => RelayerStanding[];
  /**
   * The indexer stored a flashblock's rows or applied a canonical head: the waits read their
   * receipts now rather than at the poller's next tick (receiptPoller.ts wake).
   */
  wake: () => void;
};

/** The capture relay: one per process, shared by `order capture`, the daemon's driver and the facilitator. */
export function createCaptureRelay(deps: CaptureRelayDeps): CaptureRelay {
  const { client, store } = deps;
  const pool = deps.pool ?? createRelayerPool(deps.relayer === undefined ? [] : [deps.relayer]);
  const relayerNonces = createRelayerNonces({ client, book: store.nonces, owner: deps.owner });
  const { owner } = relayerNonces;
  const logger = deps.logger.child({ component: "capture" });
  const replaceAfterMs = deps.replaceAfterMs ?? CAPTURE_REPLACE_AFTER_MS;
  const poller = createReceiptPoller({ client, pollingIntervalMs: deps.pollingIntervalMs });
  const { accountFor } = pool;
  const transactions = createCaptureTransactions({ client, chainId: deps.chainId, relayerNonces });
  const sentReceipts = createSentReceipts();
  const syncSend =
    deps.sendSync &&
    createCaptureSyncSend({ client, poller, plainSend: transactions.send, logger }, deps.sendSync);
  const { sendIntent, landed } = createCaptureIntentSend({
    client,
    store,
    transactions,
    accountFor,
    syncSend,
    sentReceipts,
    crashPoint: deps.crashPoint,
    metrics: deps.metrics,
    logger,
  });
  const gaps = createRelayerGaps({
    store,
    relayerNonces,
    chainId: deps.chainId,
    replaceAfterMs,
    logger,
    fees: transactions.fees,
    send: transactions.send,
  });
  const nonces = createCaptureNonces({
    client,
    store,
    relayerNonces,
    gaps,
    metrics: deps.metrics,
    logger,
  });
  const wait = createCaptureWait({
    store,
    poller,
    sentReceipts,
    crashPoint: deps.crashPoint,
    logger,
    onPaid: (order, txHash, receipt) => recordGas(order, txHash, receipt),
    drive: (order, capture) =>
      driveGuarded(order, capture, Date.now()).then(
        () => undefined,
        (error: unknown) => logDriveError(order.id, error),
      ),
  });
  /** Orders whose paid receipt's gas this process recorded. */
  const gasRecorded = new Set<number>();
  /** Captured orders without gas whose receipts the driver read once (capturedWithoutGas). */
  const gasLooked = new Set<number>();
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

  /**
   * The relayer for a new capture of `order`: the pool's least loaded one; for a
   * receiveWithAuthorization the payee's own key, which the token requires as the sender.
   */
  function relayerFor(order: Order): LocalAccount {
    if (pool.accounts.length === 0)
      throw new UsageError(
        `no relayer key: set ${RELAYER_KEY_ENV} (facilitator.relayerKeyEnv), facilitator.relayerKeyFile, facilitator.relayers, or pass --relayer-key-file`,
      );
    if (order.kind !== "receive") return pool.pick(Date.now())!;
    const payee = pool.accountFor(order.payee);
    if (payee !== undefined) return payee;
    const keys = pool.accounts.map((a) => a.address).join(", ");
    throw new ReceivePayeeError(
      `order ${order.id} is a receiveWithAuthorization, which the token accepts only from the payee ${getAddress(order.payee)}; the relayer key is ${keys}'s. Nothing was sent`,
    );
  }

  /** One drive step for one live intent. */
  async function driveOne(
    order: Order,
    capture: CaptureIntent,
    now: number,
  ): Promise<"resent" | "replaced" | "none"> {
    if (now / 1000 >= order.validBefore) return "none"; // the expiry pass ends it
    const seen = await landed(capture);
    if (seen !== undefined) {
      await recordGasIfPaid(order, seen);
      if (seen.receipt.status === "reverted" && !seen.receipt.preconfirmed) {
        const used = await readAuthorizationState(
          client,
          order.token,
          order.authorizer,
          order.nonce,
        );
        if (!used) {
          logger.error({
            msg: "Abandoned capture",
            order_id: order.id,
            tx_hash: seen.txHash,
            reason: "reverted on chain, authorization still unused",
          });
          await store.captures.abandon(order.id, now, {
            cause: "capture_reverted",
            txHash: seen.txHash,
          });
        }
      }
      return "none";
    }
    if (capture.sendStartedAt === null && order.source === "x402")
      return abandonUnsent(order, capture, now);
    // Used by another transaction, or canceled: the indexer moves the order when it sees the event.
    if (await readAuthorizationState(client, order.token, order.authorizer, order.nonce, "pending"))
      return "none";
    const stuck =
      // Counted from the current bytes' first send: every pass re-sends them and moves the last.
      capture.firstBroadcastAt !== null && now - capture.firstBroadcastAt >= replaceAfterMs;
    const account = accountFor(capture.relayer);
    if (stuck && account !== undefined) {
      const replacement = await replaceCapture({ store, transactions }, account, order, capture);
      logger.warn({
        msg: "Replaced capture",
        order_id: order.id,
        replaced_tx_hash: capture.txHash,
        tx_hash: replacement.txHash,
        waited_ms: now - capture.firstBroadcastAt!,
      });
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
    logger.warn({
      msg: "Abandoned unsent settle",
      order_id: order.id,
      tx_hash: capture.txHash,
      relayer_nonce: capture.relayerNonce,
      stored_by: capture.owner,
    });
    return "none";
  }

  async function driveGuarded(
    order: Order,
    capture: CaptureIntent,
    now: number,
  ): Promise<"resent" | "replaced" | "none"> {
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
        if (existing.status === "sent" && order.state === "capturing")
          await driveGuarded(order, existing, Date.now());
        const current = (await store.captures.get(orderId)) ?? existing;
        const now = (await store.getOrder(orderId)) ?? order;
        // An x402 intent a crash left unsent was just abandoned (crash rule): this caller is here
        // and waiting, so the payment is captured afresh below, on a nonce of its own.
        if (current.status !== "abandoned")
          return { order: now, txHash: current.txHash, alreadySent: true };
        order = now;
      }
      assertTransition(order.state, "capturing", "relay", orderId);
      const account = relayerFor(order);
      // Counted before the first await: concurrent settles see each other's load when they pick.
      pool.begin(orderId, account.address, Date.now());
      try {
        const sent = await signAndSend(order, account, options);
        if (sent.alreadySent) pool.end(orderId);
        else pool.sent(orderId, Date.now());
        return sent;
      } catch (error) {
        pool.end(orderId);
        throw error;
      }
    },

    async waitFor(orderId, options) {
      try {
        const seen = await wait(orderId, options);
        pool.end(orderId);
        return seen;
      } catch (error) {
        // A wait that ran out proves nothing about the transaction: it still weighs on its relayer
        // (and may make it stuck) until it is seen or the driver's pass finds the order moved on.
        if (!(error instanceof CaptureTimeoutError) && !(options.signal?.aborted ?? false))
          pool.end(orderId);
        throw error;
      }
    },

    async drive(now) {
      const pending = await store.captures.pending();
      let resent = 0;
      let replaced = 0;
      for (const { order, capture } of pending) {
        const done = await driveGuarded(order, capture, now).catch(
          (error: unknown) => (logDriveError(order.id, error), "none" as const),
        );
        if (done === "resent") resent++;
        if (done === "replaced") replaced++;
      }
      await recordCapturedGas();
      const live = new Set(pending.map((p) => p.order.id));
      pool.prune((orderId) => live.has(orderId));
      for (const account of pool.accounts)
        await nonces.tendRelayer(
          account,
          pending.map((p) => p.capture),
          now,
        );
      for (const standing of pool.standings(now)) {
        deps.metrics?.relayerPendingCaptures.set({ relayer: standing.address }, standing.pending);
        deps.metrics?.relayerStuck.set({ relayer: standing.address }, standing.stuck ? 1 : 0);
      }
      return { resent, replaced };
    },

    standings: (now) => pool.standings(now),
    wake: () => poller.wake(),
  };

  /**
   * capture()'s new transaction: gas estimated from `account` (the estimate runs the call: a revert
   * there is the simulation's) unless the caller measured it already, signed, stored, sent. The
   * estimate, the fees and the relayer's pending count are read at once: one round trip before
   * signing, not three.
   */
  async function signAndSend(
    order: Order,
    account: LocalAccount,
    options: CaptureOptions,
  ): Promise<CaptureSent> {
    const orderId = order.id;
    const call = callOf(order);
    const overload = options.overload ?? (await captureOverload(client, call));
    const estimating =
      options.gas !== undefined
        ? { data: captureCallData(call, overload, options.suffix), gas: options.gas }
        : estimateCapture(client, call, account.address, { suffix: options.suffix, overload });
    const [{ data, gas: estimate }, fees, floor] = await Promise.all([
      estimating,
      transactions.fees(),
      relayerNonces.recentPendingCount(account.address),
    ]);
    const tx = await transactions.sign(
      account,
      order,
      data,
      estimate + (estimate * GAS_LIMIT_HEADROOM_PERCENT) / 100n,
      undefined,
      fees,
      floor,
    );
    deps.crashPoint?.("signed");
    enter(orderId);
    try {
      const started = await nonces.startIntent(orderId, tx, owner);
      if (!started.created)
        return { order: started.order, txHash: started.capture.txHash, alreadySent: true };
      deps.crashPoint?.("stored");
      const sent = await sendIntent(started.order, started.capture, "first");
      return { order: started.order, txHash: sent.txHash, alreadySent: false };
    } catch (error) {
      // The node refused the bytes: nothing was broadcast with the nonce, the book reuses it.
      if (error instanceof CaptureFundsError)
        await store.captures.abandon(orderId, Date.now(), { nonceUnused: true });
      throw error;
    } finally {
      leave(orderId);
    }
  }

  /**
   * Gas accounting: the paid receipt's gas used and effective price go with the capture (schema 17)
   * and to the metrics, once per order in this process (a wait sees the pre-confirmed receipt, then
   * maybe the sealed one: the same transaction, the same gas). A failed write is logged, never
   * turned into a failed settle: the payment was made.
   */
  async function recordGas(
    order: Order,
    txHash: Hex,
    receipt: TransactionReceiptSummary,
  ): Promise<void> {
    if (gasRecorded.has(order.id)) return;
    gasRecorded.add(order.id);
    const gas = { gasUsed: receipt.gasUsed, effectiveGasPrice: receipt.effectiveGasPrice };
    await store.captures.recordGas(order.id, txHash, gas, Date.now()).catch((error: unknown) =>
      logger.warn({
        msg: "Failed to record capture gas",
        order_id: order.id,
        tx_hash: txHash,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
    deps.metrics?.captureGasUsed.observe(Number(gas.gasUsed));
    if (gas.effectiveGasPrice !== null)
      deps.metrics?.captureGasCost.inc(
        { payee: deps.payeeLabel?.(order.payee) ?? "other" },
        Number(gas.gasUsed * gas.effectiveGasPrice),
      );
  }

  /**
   * Gas accounting for a receipt the driver found (no wait of this process saw it: a restart, or a
   * wait that ran out): recorded when it shows the payment, judged as a wait judges it.
   */
  async function recordGasIfPaid(
    order: Order,
    seen: { txHash: Hex; receipt: TransactionReceiptSummary },
  ): Promise<void> {
    const verdict = judgeCaptureReceipt(seen.receipt, {
      token: order.token,
      authorizer: order.authorizer,
      payee: order.payee,
      value: BigInt(order.value),
      nonce: order.nonce,
    });
    if (verdict.kind === "paid") await recordGas(order, seen.txHash, seen.receipt);
  }

  /**
   * The driver's pass over orders the chain moved to captured before their gas was recorded: the
   * indexer usually gets there first after a restart, so driveOne never sees them. Each order's
   * receipts are read once per process: an order captured by another's transaction (the
   * authorization used by someone else) has none of ours, and would come back at every pass.
   */
  async function recordCapturedGas(): Promise<void> {
    const since = Date.now() - CAPTURED_GAS_LOOKBACK_MS;
    const captured = await store.captures.capturedWithoutGas(since).catch((error: unknown) => {
      logger.warn({
        msg: "Failed to read captures without gas",
        error: error instanceof Error ? error.message : String(error),
      });
      return [];
    });
    for (const { order, capture } of captured) {
      if (gasLooked.has(order.id)) continue;
      const seen = await landed(capture).catch((error: unknown) => {
        logDriveError(order.id, error);
        return null;
      });
      if (seen === null) continue; // read again at the next pass
      gasLooked.add(order.id);
      if (seen !== undefined) await recordGasIfPaid(order, seen);
    }
  }

  function logDriveError(orderId: number, error: unknown): void {
    logger.warn({
      msg: "Failed to drive capture",
      order_id: orderId,
      error: error instanceof Error ? error.message : String(error),
    });
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
