import type { Address, Hex } from "viem";
import { answerText } from "../chain/httpTransport.js";
import { nodeErrorOf, unwrap, type NodeError } from "../chain/jsonRpcAnswer.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { parseReceipt, type TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import { RetryableError, walkCauses } from "../errors/base.js";
import { RpcRequestError, RpcResponseError } from "../errors/rpc.js";
import type { Logger } from "../ops/logger.js";
import { sendRefusal } from "./captureTransactions.js";
import type { ReceiptPoller } from "./receiptPoller.js";
import type { SendOutcome } from "./relayerGaps.js";

/*
 * eth_sendRawTransactionSync (EIP-7966, draft): the node takes the bytes as eth_sendRawTransaction
 * does, then answers with the transaction's receipt. Base's node (base/base,
 * crates/client/flashblocks/src/rpc/eth.rs) answers with the receipt of the first flashblock that
 * includes it, or the canonical one, within the caller's timeout capped at 6,000 ms: a settle gets
 * its pre-confirmation in one round trip instead of a send and a receipt poll.
 *
 * Whether an endpoint serves it is learnt from the first send (the probe) and remembered for the
 * relay's life: a "method not found" means never again; a transport failure says nothing.
 *
 * The hedge: Base's handler can miss a flashblock published before it started to listen and wait
 * out its timeout (base/base#3826). A sync send unanswered after `hedgeAfterMs` is raced by the
 * relay's receipt poller: whichever shows a receipt first answers.
 */

/** Base's cap on the sync send's wait (base/base crates/client/flashblocks/src/rpc/eth.rs). */
export const SEND_SYNC_MAX_TIMEOUT_MS = 6_000;
/**
 * How long a sync send runs alone before the receipt poller joins it: one Base flashblock (200 ms)
 * and a round trip. A sync send that has not answered by then either waits for a later flashblock
 * (the poller costs one batched read per tick) or missed the one that included it (base/base#3826).
 */
export const SEND_SYNC_HEDGE_AFTER_MS = 250;
/**
 * Most sync sends of a relay on the wire at once; past it a send goes plainly and its wait polls.
 * Each holds one of the RPC client's requests in flight (rpcPacing.ts: 32, and 4 more for head
 * requests) until the node answers, a flashblock later or at its timeout: uncapped, a burst of
 * settles, or one relayer's transactions held back, would hold every slot and stall the reads of
 * every other settle and of the indexer behind them.
 */
export const SEND_SYNC_MAX_IN_FLIGHT = 8;
/** EIP-7966: taken into the pool, no receipt within the timeout (data: the hash). */
const SEND_SYNC_TIMEOUT_CODE = 4;
/** EIP-7966: taken into the pool, not processable yet (a nonce gap, funds): data the hash. */
const SEND_SYNC_NOT_READY_CODE = 5;
/** JSON-RPC 2.0 "method not found", and the -32004 "method not supported" of EIP-1474. */
const UNSUPPORTED_CODES = [-32601, -32004];
/**
 * Note: providers word a method they do not serve in many ways (geth "the method ... does not
 * exist/is not available", proxyd -32001 "rpc method is not whitelisted", others "unsupported
 * method", "method not supported"); a refusal of the transaction itself never names a method.
 */
const UNSUPPORTED_TEXT = new RegExp(
  String.raw`\bmethod\b.*\b(?:not found|does not exist|is not available|not supported|` +
    String.raw`unsupported|not whitelisted|not allowed)\b|\b(?:unsupported|unknown) method\b`,
  "i",
);

export const PLAIN_SEND = "eth_sendRawTransaction";
export const SYNC_SEND = "eth_sendRawTransactionSync";
/** The JSON-RPC method that handed a capture's bytes to the node (the broadcast metric's label). */
export type SendMethod = typeof PLAIN_SEND | typeof SYNC_SEND;

/** A receipt of a sent transaction, from the sync send's answer or the hedging poller. */
export type SentReceipt = { txHash: Hex; receipt: TransactionReceiptSummary };

/** A send's end: the node's answer as for a plain send, the method, a receipt if one came. */
export type SyncSent = { outcome: SendOutcome; method: SendMethod; seen?: SentReceipt | undefined };

export type SyncSendOptions = {
  /** The wait the sync send asks the node for, in ms: capped at SEND_SYNC_MAX_TIMEOUT_MS. */
  timeoutMs: number;
  /** SEND_SYNC_HEDGE_AFTER_MS by default. */
  hedgeAfterMs?: number | undefined;
  /** SEND_SYNC_MAX_IN_FLIGHT by default. */
  maxInFlight?: number | undefined;
};

export type CaptureSyncSend = {
  /**
   * Sends `rawTx` (hash `txHash`, from `relayer`) in one round trip when the endpoint serves it,
   * else plainly.
   */
  send: (rawTx: Hex, txHash: Hex, relayer: Address) => Promise<SyncSent>;
};

type SyncAnswer =
  | { kind: "receipt"; receipt: TransactionReceiptSummary }
  | { kind: "pooled" }
  | { kind: "unsupported"; reason: string };

/** The capture relay's first sends (captureIntentSend.ts): sync where served, poller-hedged. */
export function createCaptureSyncSend(
  deps: {
    client: RpcClient;
    poller: ReceiptPoller;
    /** eth_sendRawTransaction (captureTransactions.ts send): the fallback. */
    plainSend: (rawTx: Hex) => Promise<SendOutcome>;
    logger: Logger;
  },
  options: SyncSendOptions,
): CaptureSyncSend {
  const { client, poller, logger } = deps;
  const timeoutMs = Math.max(1, Math.min(SEND_SYNC_MAX_TIMEOUT_MS, Math.floor(options.timeoutMs)));
  const hedgeAfterMs = options.hedgeAfterMs ?? SEND_SYNC_HEDGE_AFTER_MS;
  const maxInFlight = options.maxInFlight ?? SEND_SYNC_MAX_IN_FLIGHT;
  let served: boolean | undefined;
  /** A probe is on the wire: other sends go plainly meanwhile, so one probe runs at a time. */
  let probing = false;
  /** Sync sends not yet answered, those a hedge already beat included. */
  let inFlight = 0;
  /**
   * The same per relayer. One relayer takes at most half the sync sends on the wire: a held-back
   * one's sends wait out the node's timeout, and would otherwise hold every slot the others use.
   */
  const inFlightOf = new Map<string, number>();
  const relayerShare = Math.max(1, Math.ceil(maxInFlight / 2));

  const plain = async (rawTx: Hex): Promise<SyncSent> => ({
    outcome: await deps.plainSend(rawTx),
    method: PLAIN_SEND,
  });

  function decide(answer: boolean, reason: string): void {
    if (served !== undefined) return;
    served = answer;
    logger.info({ msg: "Probed sync send", method: SYNC_SEND, served: answer, reason });
  }

  /** One eth_sendRawTransactionSync; the node's refusals of the bytes throw RpcRequestError. */
  function syncCall(rawTx: Hex, txHash: Hex): Promise<SyncAnswer> {
    // Note: EIP-7966 types the timeout QUANTITY but shows a JSON number; Base's node reads a u64
    // number of milliseconds, as the devnet's stand-in does.
    return client.requestRaw(SYNC_SEND, [rawTx, timeoutMs], async ({ body, id, endpoint }) => {
      let answer: unknown;
      try {
        answer = JSON.parse(answerText(body));
      } catch {
        throw new RpcResponseError(`${endpoint} answered ${SYNC_SEND} with something not JSON`);
      }
      // Read here rather than thrown: the client would retry code 4 as a node's passing trouble.
      const error = nodeErrorOf(answer);
      if (error !== undefined) return readNodeError(error);
      const receipt = parseReceipt(unwrap(answer, SYNC_SEND, id, endpoint), txHash);
      return receipt === null ? { kind: "pooled" } : { kind: "receipt", receipt };
    });
  }

  /** The first receipt the poller shows for `txHash` after `hedgeAfterMs`; never once stopped. */
  async function hedge(txHash: Hex, stop: AbortSignal): Promise<SentReceipt> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, hedgeAfterMs);
      stop.addEventListener("abort", () => clearTimeout(timer), { once: true });
    });
    while (!stop.aborted) {
      // A failed read is no verdict: the sync send is still on its way, and the next tick reads again.
      const standing = await poller.next([txHash], stop).catch(() => ({ kind: "none" as const }));
      if (standing.kind === "preconfirmed" || standing.kind === "canonical")
        return { txHash: standing.txHash, receipt: standing.receipt };
    }
    return new Promise<never>(() => {});
  }

  async function sendSync(rawTx: Hex, txHash: Hex, relayer: string): Promise<SyncSent> {
    const stop = new AbortController();
    inFlight++;
    inFlightOf.set(relayer, (inFlightOf.get(relayer) ?? 0) + 1);
    const answered = syncCall(rawTx, txHash).then(
      (answer) => ({ kind: "answer", answer }) as const,
      (error: unknown) => ({ kind: "error", error }) as const,
    );
    // The probe is decided by the node's answer, whoever wins the race below.
    void answered.then((done) => {
      inFlight--;
      const left = (inFlightOf.get(relayer) ?? 1) - 1;
      if (left === 0) inFlightOf.delete(relayer);
      else inFlightOf.set(relayer, left);
      probing = false;
      if (done.kind === "answer" && done.answer.kind === "unsupported")
        decide(false, done.answer.reason);
      else if (done.kind === "answer" || isNodeVerdict(done.error)) decide(true, "answered");
    });
    const first = await Promise.race([
      answered,
      hedge(txHash, stop.signal).then((seen) => ({ kind: "hedged", seen }) as const),
    ]);
    stop.abort();
    // A receipt of the transaction: the node took the bytes, whatever the sync send says later.
    if (first.kind === "hedged")
      return { outcome: "accepted", method: SYNC_SEND, seen: first.seen };
    if (first.kind === "error") {
      // A transport failure, or a node's passing trouble, after the client's retries: whether the
      // bytes arrived is unknown; the plain send answers "known" if they did.
      if (!isNodeVerdict(first.error)) return plain(rawTx);
      return { outcome: sendRefusal(first.error), method: SYNC_SEND };
    }
    const { answer } = first;
    if (answer.kind === "unsupported") return plain(rawTx);
    if (answer.kind === "pooled") return { outcome: "accepted", method: SYNC_SEND };
    return { outcome: "accepted", method: SYNC_SEND, seen: { txHash, receipt: answer.receipt } };
  }

  return {
    send(rawTx, txHash, relayer) {
      const key = relayer.toLowerCase();
      if (
        served === false ||
        (served === undefined && probing) ||
        inFlight >= maxInFlight ||
        (inFlightOf.get(key) ?? 0) >= relayerShare
      )
        return plain(rawTx);
      if (served === undefined) probing = true;
      return sendSync(rawTx, txHash, key);
    },
  };
}

/** A node's error to a sync send: pooled without a receipt, not served, or a refusal (thrown). */
function readNodeError(error: NodeError): SyncAnswer {
  if (error.code === SEND_SYNC_TIMEOUT_CODE || error.code === SEND_SYNC_NOT_READY_CODE)
    return { kind: "pooled" };
  if (UNSUPPORTED_CODES.includes(error.code) || UNSUPPORTED_TEXT.test(error.message))
    return { kind: "unsupported", reason: `code ${error.code}: ${error.message.slice(0, 200)}` };
  // A node that reads its own method's parameters otherwise (a hex timeout): not usable as sent.
  if (error.code === -32602 && /timeout/i.test(error.message))
    return { kind: "unsupported", reason: `code ${error.code}: ${error.message.slice(0, 200)}` };
  throw new RpcRequestError(SYNC_SEND, error);
}

/**
 * Whether an error is the node's own answer to the bytes (a refusal: "nonce too low", "already
 * known", ...), which proves it serves the method; not a transport failure or an exhausted retry.
 */
function isNodeVerdict(error: unknown): boolean {
  return !(error instanceof RetryableError) && walkCauses(error, isRequestError) !== undefined;
}

const isRequestError = (error: Error): error is RpcRequestError => error instanceof RpcRequestError;
