import { randomUUID } from "node:crypto";
import { inspect } from "node:util";
import { keccak256, stringToHex, type Address, type Hex } from "viem";
import type { CaptureRelay } from "../authorization/captureRelay.js";
import type { CaptureOverload } from "../authorization/simulateCapture.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { BaseError } from "../errors/base.js";
import {
  CaptureMismatchError,
  CaptureRevertedError,
  CaptureTimeoutError,
} from "../errors/capture.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { sleep } from "../ops/shutdown.js";
import { OrderExistsError, type NewOrder, type Order } from "../store/orderStates.js";
import type { ClaimFrom } from "../store/settlementStore.js";
import type { Store } from "../store/store.js";
import {
  ANSWER_STATUS,
  refusalStatus,
  settlePending,
  settleRefused,
  settleSucceeded,
  verifyAccepted,
  verifyRefused,
} from "./answers.js";
import type { ExactPolicy, FacilitatorToken } from "./exactFieldChecks.js";
import { INVALID_REASONS as R, refuse, type Refusal } from "./invalidReasons.js";
import { createPaymentJudge } from "./judgePayment.js";
import { parseFacilitatorRequest } from "./parseRequest.js";
import { refusalOfFailedSimulation } from "./simulationRefusal.js";
import {
  paymentIdentifierConflict,
  readPaymentIdentifier,
  type PaymentIdentifier,
} from "./paymentIdentifier.js";
import { buildSupportedBody } from "./supportedBody.js";
import {
  BUILDER_CODE_EXTENSION,
  evmNetwork,
  PAYMENT_IDENTIFIER_EXTENSION,
  type ExactAuthorization,
  type ExactPaymentRequest,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from "./wire.js";

export type FacilitatorDeps = {
  client: RpcClient;
  store: Store;
  relay: CaptureRelay;
  logger: Logger;
  metrics: Pick<Metrics, "settleRequests" | "settleLatency">;
  chainId: number;
  /** The configured tokens with their EIP-712 domains, read from the contracts at start. */
  tokens: readonly FacilitatorToken[];
  /** The relayer verify simulates from (the pool's first). */
  relayer: Address;
  /** Every relayer of the pool, as GET /supported lists its signers; absent: `relayer` alone. */
  signers?: readonly Address[] | undefined;
  /** Lower-case payees settled for; empty: any. */
  payTo: readonly Address[];
  /** Lower-case token address → the smallest amount settled (facilitator.minAmount); absent: none. */
  minAmounts?: ReadonlyMap<string, bigint> | undefined;
  settleWaitsFor: "preconfirmed" | "confirmed";
  settleTimeoutMs: number;
  /** The facilitator's own ERC-8021 code (w), if any. */
  builderCode: string | undefined;
};

/** A settle claim taken by a request that never answered is taken over this long after its wait ended. */
const SETTLE_CLAIM_LEASE_MARGIN_MS = 30_000;
/** How often a payment-identifier repeat reads whether the first request answered. */
const REPEAT_POLL_INTERVAL_MS = 50;

/** An answer and the HTTP status it goes out with. */
export type Answer<T> = { status: number; body: T };

export type Facilitator = {
  supported: () => SupportedResponse;
  verify: (body: unknown) => Promise<Answer<VerifyResponse>>;
  settle: (body: unknown, signal?: AbortSignal) => Promise<Answer<SettleResponse>>;
};

/**
 * The x402 facilitator over the capture relay. Verify judges a payment as the token will: the
 * fields, the EIP-712 signature by FiatToken v2.2's rules, then an eth_estimateGas of the transfer
 * itself at the pending view (the token's checks of nonce and balance, and the settle's gas); the
 * nonce and balance are read only to name a revert. Settle judges the same way every time, records the
 * payment as an order (source x402), claims it in the database and captures it; it answers success
 * only for a receipt that shows the payment, and at most once per payment (settlementStore.ts):
 * duplicates are refused as a used nonce, the follow-up of a `settlement_pending` answer gets the
 * outcome once, and a payment-identifier repeat (same id, payload and requirements) the first answer.
 */
export function createFacilitator(deps: FacilitatorDeps): Facilitator {
  const { client, store, relay } = deps;
  const logger = deps.logger.child({ component: "facilitator" });
  const network = evmNetwork(deps.chainId);
  const policy: ExactPolicy = {
    chainId: deps.chainId,
    tokens: deps.tokens,
    payTo: deps.payTo,
    minAmounts: deps.minAmounts,
  };
  const { judge, suffixOf } = createPaymentJudge({
    client,
    chainId: deps.chainId,
    tokens: deps.tokens,
    relayer: deps.relayer,
    builderCode: deps.builderCode,
    policy,
  });
  const supported = buildSupportedBody({
    chainId: deps.chainId,
    tokens: deps.tokens,
    signers: [...(deps.signers ?? [deps.relayer])],
    extensions: [BUILDER_CODE_EXTENSION, PAYMENT_IDENTIFIER_EXTENSION],
  });

  function count(endpoint: "verify" | "settle", outcome: string): void {
    deps.metrics.settleRequests.inc({ endpoint, outcome });
  }

  /** The order holding this payment, if one was recorded before (by an earlier /settle, or `order add`). */
  async function recorded(request: ExactPaymentRequest): Promise<Order | undefined> {
    const { authorization, requirements } = request;
    return store.captures.findOrder(
      deps.chainId,
      requirements.asset,
      authorization.from,
      authorization.nonce,
    );
  }

  /** The order a payment is recorded as (source x402). */
  function orderOf(request: ExactPaymentRequest): NewOrder {
    const { authorization, requirements } = request;
    return {
      chainId: deps.chainId,
      token: requirements.asset,
      authorizer: authorization.from,
      payee: authorization.to,
      value: authorization.value,
      validAfter: Number(authorization.validAfter),
      validBefore: Number(authorization.validBefore),
      nonce: authorization.nonce,
      kind: "transfer",
      signature: request.signature,
      source: "x402",
    };
  }

  /**
   * The answer a payment-identifier repeat gets: the first request's, once it has one (waited for
   * while that request still holds the claim, up to the settle wait); undefined when the first
   * answered `settlement_pending` (the repeat is its follow-up) or is still settling.
   */
  async function firstAnswer(
    orderId: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer<SettleResponse> | undefined> {
    const deadline = Date.now() + deps.settleTimeoutMs;
    for (;;) {
      const settlement = await store.settlements.get(orderId);
      if (settlement === undefined || settlement.state === "pending") return undefined;
      if (settlement.state !== "settling" && settlement.answer !== null)
        return { status: ANSWER_STATUS.ok, body: JSON.parse(settlement.answer) as SettleResponse };
      if (Date.now() >= deadline || signal?.aborted === true) return undefined;
      await sleep(REPEAT_POLL_INTERVAL_MS);
    }
  }

  /**
   * /settle of one payment. Judged in full like /verify (a follow-up of a pending answer: its fields
   * and signature); then recorded as an order (source x402) and claimed in the database: of requests
   * for one payment side by side, across processes, one holds the claim and the others are refused
   * as a used nonce, before anything is signed or sent. The holder captures, waits as configured,
   * and records its answer under the claim before giving it: a success is answered once.
   */
  async function settleRequest(
    request: ExactPaymentRequest,
    signal: AbortSignal | undefined,
  ): Promise<Answer<SettleResponse>> {
    const { authorization } = request;
    const payer = authorization.from;
    const identifier = fingerprinted(readPaymentIdentifier(request.paymentPayload), request);
    if (identifier.kind === "invalid") return refused(identifier.refusal, payer);
    const bound =
      identifier.kind === "present" ? await store.captures.getPaymentId(identifier.id) : undefined;
    if (
      identifier.kind === "present" &&
      bound !== undefined &&
      bound.fingerprint !== identifier.fingerprint
    )
      return refused(paymentIdentifierConflict(identifier.id), payer);

    let order = await recorded(request);
    if (order !== undefined && !sameAuthorization(order, authorization))
      return refused(otherPayment(order, request), payer);
    if (order !== undefined && bound !== undefined && bound.orderId === order.id) {
      // The extension's purpose (x402 issue #786): an idempotent retry gets the first outcome again.
      const first = await firstAnswer(order.id, signal);
      if (first !== undefined) return first;
    }
    const settlement = order === undefined ? undefined : await store.settlements.get(order.id);
    // Judged as of the claim that answered pending: that request passed the full judgement then.
    const followUp =
      settlement?.state === "pending"
        ? { asOfSeconds: BigInt(Math.floor(settlement.claimedAt / 1000)) }
        : undefined;
    const judged = await judge(request, followUp);
    if (judged.refusal !== undefined) return refused(judged.refusal, payer);

    const claim = randomUUID();
    let claimed = false;
    if (order === undefined) {
      // A first /settle records the order and takes its claim in one write.
      const added = await store.settlements
        .addAndClaim(orderOf(request), claim, Date.now())
        .catch((error: unknown) => {
          if (error instanceof OrderExistsError) return undefined; // recorded by a request beside this one
          throw error;
        });
      claimed = added !== undefined;
      order = added ?? (await recorded(request))!;
      if (!sameAuthorization(order, authorization))
        return refused(otherPayment(order, request), payer);
    }
    if (identifier.kind === "present") {
      const binding = await store.captures.bindPaymentId(
        { paymentId: identifier.id, fingerprint: identifier.fingerprint, orderId: order.id },
        Date.now(),
      );
      if (binding.fingerprint !== identifier.fingerprint) {
        // Another payload took the id meanwhile: this request ends here (its claim, if any, answered).
        const conflict = refused(paymentIdentifierConflict(identifier.id), payer);
        const outcome = {
          state: "failed" as const,
          txHash: null,
          answer: JSON.stringify(conflict.body),
        };
        if (claimed) await store.settlements.answer(order.id, claim, outcome, Date.now());
        return conflict;
      }
    }
    if (!claimed) {
      const now = Date.now();
      const from: ClaimFrom =
        followUp !== undefined
          ? { kind: "pending" }
          : {
              kind: "open",
              staleBefore: now - deps.settleTimeoutMs - SETTLE_CLAIM_LEASE_MARGIN_MS,
            };
      const taken = await store.settlements.claim(order.id, claim, from, now);
      if (!taken.claimed) {
        // A repeat of the same id and payload arriving while the first settles waits for its answer.
        const first =
          identifier.kind === "present" ? await firstAnswer(order.id, signal) : undefined;
        if (first !== undefined) return first;
        logger.info({
          msg: "Refused duplicate settle",
          order_id: order.id,
          settlement_state: taken.settlement.state,
          payer,
        });
        const why = `the authorization ${authorization.nonce} of ${payer} is already settled or being settled by another request`;
        return refused(refuse(R.nonceAlreadyUsed, why), payer);
      }
    }

    const { answer, state, txHash, blockNumber } = await settleClaimed(
      order,
      request,
      { overload: judged.overload, gas: judged.gas },
      signal,
    );
    const kept = await store.settlements.answer(
      order.id,
      claim,
      { state, txHash, answer: JSON.stringify(answer.body), blockNumber },
      Date.now(),
    );
    if (!kept) {
      // Another request took the claim over (this one outlived its lease): it answers, not this one.
      logger.warn({ msg: "Lost settle claim", order_id: order.id, payer });
      const why = `the authorization ${authorization.nonce} of ${payer} is being settled by another request`;
      return refused(refuse(R.nonceAlreadyUsed, why), payer);
    }
    return answer;
  }

  /** What a claimed settle answers, and what its x402_settlements row records of it. */
  /** `blockNumber`: of the receipt a success was answered on (the settlement.settled webhook's). */
  type Settled = {
    answer: Answer<SettleResponse>;
    state: "pending" | "succeeded" | "failed";
    txHash: Hex | null;
    blockNumber?: bigint;
  };

  /** Captures a claimed payment and waits as configured. */
  async function settleClaimed(
    order: Order,
    request: ExactPaymentRequest,
    measured: { overload: CaptureOverload; gas?: bigint | undefined },
    signal: AbortSignal | undefined,
  ): Promise<Settled> {
    const payer = request.authorization.from;
    const answered = (body: SettleResponse) => ({ status: ANSWER_STATUS.ok, body });
    try {
      const sent = await relay.capture(order.id, { suffix: suffixOf(request), ...measured });
      const confirmations = deps.settleWaitsFor === "confirmed" ? 1 : 0;
      const seen = await relay.waitFor(order.id, {
        confirmations,
        timeoutMs: deps.settleTimeoutMs,
        signal,
      });
      logger.info({
        msg: "Settled payment",
        order_id: order.id,
        tx_hash: seen.txHash,
        status: seen.status,
        already_sent: sent.alreadySent,
        payer,
      });
      const body = settleSucceeded({
        transaction: seen.txHash,
        network,
        payer,
        amount: request.authorization.value,
      });
      return {
        answer: answered(body),
        state: "succeeded",
        txHash: seen.txHash,
        blockNumber: seen.blockNumber,
      };
    } catch (error) {
      logger.warn({
        msg: "Failed to settle payment",
        order_id: order.id,
        payer,
        error: message(error),
      });
      if (error instanceof CaptureTimeoutError) {
        const body = settlePending({
          transaction: error.txHash,
          network,
          payer,
          message: message(error),
        });
        return { answer: answered(body), state: "pending", txHash: error.txHash };
      }
      // On chain: the reference answers these with the transaction's hash (settleEIP3009).
      const onChain =
        error instanceof CaptureMismatchError || error instanceof CaptureRevertedError
          ? error.txHash
          : undefined;
      if (onChain !== undefined) {
        const reason =
          error instanceof CaptureMismatchError ? R.transferEventMismatch : R.transactionFailed;
        const body = {
          ...settleRefused(refuse(reason, message(error)), network, payer),
          transaction: onChain,
        };
        return { answer: answered(body), state: "failed", txHash: onChain };
      }
      // Nothing sent: a simulation or gas estimate that reverted gets verify's reason for it.
      const refusal =
        error instanceof CaptureRevertedError
          ? refusalOfFailedSimulation({ revertReason: error.reason }, request.authorization.value)
          : refuse(R.unexpectedSettleError, message(error));
      return { answer: refused(refusal, payer), state: "failed", txHash: null };
    }
  }

  /** The payment-identifier's fingerprint covers the requirements too: the same payload for another price is another request. */
  function fingerprinted(
    identifier: PaymentIdentifier,
    request: ExactPaymentRequest,
  ): PaymentIdentifier {
    if (identifier.kind !== "present") return identifier;
    const requirements = JSON.stringify(request.requirements, (_key, value: unknown) =>
      typeof value === "bigint" ? value.toString() : value,
    );
    return {
      ...identifier,
      fingerprint: keccak256(stringToHex(`${identifier.fingerprint}${requirements}`)),
    };
  }

  function refused(refusal: Refusal, payer?: Address): Answer<SettleResponse> {
    return { status: refusalStatus(refusal), body: settleRefused(refusal, network, payer) };
  }

  return {
    supported: () => supported,

    async verify(body) {
      const parsed = parseFacilitatorRequest(body);
      let answer: Answer<VerifyResponse>;
      if (!parsed.ok)
        answer = {
          status: refusalStatus(parsed.refusal),
          body: verifyRefused(parsed.refusal, parsed.payer),
        };
      else {
        const payer = parsed.request.authorization.from;
        try {
          const { refusal } = await judge(parsed.request);
          answer =
            refusal === undefined
              ? { status: 200, body: verifyAccepted(payer) }
              : { status: refusalStatus(refusal), body: verifyRefused(refusal, payer) };
        } catch (error) {
          logger.warn({ msg: "Failed to verify payment", error: message(error) });
          answer = {
            status: 200,
            body: verifyRefused(refuse(R.unexpectedVerifyError, message(error)), payer),
          };
        }
      }
      count("verify", answer.body.isValid ? "valid" : (answer.body.invalidReason ?? "invalid"));
      return answer;
    },

    async settle(body, signal) {
      const started = performance.now();
      const parsed = parseFacilitatorRequest(body);
      let answer: Answer<SettleResponse>;
      if (!parsed.ok) answer = refused(parsed.refusal, parsed.payer);
      else {
        const payer = parsed.request.authorization.from;
        try {
          answer = await settleRequest(parsed.request, signal);
        } catch (error) {
          // Before a claim or after its answer was recorded: nothing this request sent is answered here.
          logger.warn({ msg: "Failed to settle payment", payer, error: message(error) });
          answer = refused(refuse(R.unexpectedSettleError, message(error)), payer);
        }
      }
      count("settle", answer.body.success ? "success" : (answer.body.errorReason ?? "failed"));
      const outcome = answer.body.success
        ? "success"
        : answer.body.errorReason === R.settlementPending
          ? "pending"
          : "refused";
      deps.metrics.settleLatency.observe({ outcome }, (performance.now() - started) / 1000);
      return answer;
    },
  };
}

/** Whether a stored order holds this very authorization (not another one signed with its nonce). */
function sameAuthorization(order: Order, authorization: ExactAuthorization): boolean {
  return (
    order.kind === "transfer" &&
    BigInt(order.value) === authorization.value &&
    order.payee.toLowerCase() === authorization.to.toLowerCase() &&
    BigInt(order.validAfter) === authorization.validAfter &&
    BigInt(order.validBefore) === authorization.validBefore
  );
}

function otherPayment(order: Order, request: ExactPaymentRequest): Refusal {
  const { nonce, from } = request.authorization;
  return refuse(
    R.nonceAlreadyUsed,
    `the nonce ${nonce} of ${from} belongs to another payment (order ${order.id})`,
  );
}

/** Longest operator detail kept from an error chain, in characters; causes followed at most. */
const MAX_DETAIL_CHARS = 2_000;
const MAX_CAUSES = 5;

/**
 * What went wrong, for the operator: the error's one line and those of its causes, on one line.
 * It may quote a node or name an order, so it goes only to the log and into a refusal's message,
 * which facilitatorServer.ts logs under the request id and never sends (the buyer reads the
 * fixed line of the reason, answers.ts buyerLine).
 */
function message(error: unknown): string {
  const lines: string[] = [];
  let at: unknown = error;
  for (let depth = 0; depth < MAX_CAUSES && at !== undefined && at !== null; depth++) {
    // A thrown non-Error may be any value: inspect() shows an object's fields, not "[object Object]".
    const line =
      at instanceof BaseError
        ? at.shortMessage
        : at instanceof Error
          ? at.message
          : typeof at === "string"
            ? at
            : inspect(at);
    if (!lines.some((seen) => seen.includes(line))) lines.push(line);
    at = at instanceof Error ? at.cause : undefined;
  }
  return lines.join(" <- ").replace(/\s+/g, " ").slice(0, MAX_DETAIL_CHARS);
}
