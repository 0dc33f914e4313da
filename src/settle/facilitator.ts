import { decodeFunctionResult, encodeFunctionData, parseAbi, type Address } from "viem";
import type { CaptureRelay } from "../authorization/captureRelay.js";
import { parseData, rpc } from "../authorization/cancelRelay.js";
import type { TokenDomain } from "../authorization/eip3009.js";
import { simulateCapture } from "../authorization/simulateCapture.js";
import { readAuthorizationState } from "../authorization/tokenReads.js";
import { BadSignatureError, verifyTransferAuthorization, WrongSignerError } from "../authorization/verifyAuthorization.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { BaseError } from "../errors/base.js";
import { CaptureRevertedError, CaptureTimeoutError } from "../errors/capture.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { OrderExistsError, type Order } from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import { ANSWER_STATUS, refusalStatus, settlePending, settleRefused, settleSucceeded, verifyAccepted, verifyRefused } from "./answers.js";
import { builderCodeSuffix, readPayloadBuilderCodes } from "./builderCode.js";
import { checkExactFields, type ExactPolicy, type FacilitatorToken } from "./exactFieldChecks.js";
import { INVALID_REASONS as R, refuse, type Refusal } from "./invalidReasons.js";
import { parseFacilitatorRequest } from "./parseRequest.js";
import { refusalOfFailedSimulation } from "./simulationRefusal.js";
import { paymentIdentifierConflict, readPaymentIdentifier } from "./paymentIdentifier.js";
import { buildSupportedBody } from "./supportedBody.js";
import { BUILDER_CODE_EXTENSION, evmNetwork, PAYMENT_IDENTIFIER_EXTENSION, type ExactPaymentRequest, type SettleResponse, type SupportedResponse, type VerifyResponse } from "./wire.js";

const BALANCE_ABI = parseAbi(["function balanceOf(address account) view returns (uint256)"]);

export type FacilitatorDeps = {
  client: RpcClient;
  store: Store;
  relay: CaptureRelay;
  logger: Logger;
  metrics: Pick<Metrics, "settleRequests" | "settleLatency">;
  chainId: number;
  /** The configured tokens with their EIP-712 domains, read from the contracts at start. */
  tokens: readonly FacilitatorToken[];
  relayer: Address;
  /** Lower-case payees settled for; empty: any. */
  payTo: readonly Address[];
  settleWaitsFor: "preconfirmed" | "confirmed";
  settleTimeoutMs: number;
  /** The facilitator's own ERC-8021 code (w), if any. */
  builderCode: string | undefined;
};

/** An answer and the HTTP status it goes out with. */
export type Answer<T> = { status: number; body: T };

export type Facilitator = {
  supported: () => SupportedResponse;
  verify: (body: unknown) => Promise<Answer<VerifyResponse>>;
  settle: (body: unknown, signal?: AbortSignal) => Promise<Answer<SettleResponse>>;
};

/**
 * The x402 facilitator over the capture relay. Verify judges a payment as the token will: the
 * fields, the EIP-712 signature by FiatToken v2.2's rules, the nonce, the balance and an eth_call of
 * the transfer itself. Settle records the payment as an order (source x402) and captures it; a
 * payment already recorded (same token, payer and nonce) is never sent again: its transaction is
 * awaited and answered. With a payment-identifier, the same id with another payload is refused.
 */
export function createFacilitator(deps: FacilitatorDeps): Facilitator {
  const { client, store, relay } = deps;
  const logger = deps.logger.child({ component: "facilitator" });
  const network = evmNetwork(deps.chainId);
  const policy: ExactPolicy = { chainId: deps.chainId, tokens: deps.tokens, payTo: deps.payTo };
  const supported = buildSupportedBody({ chainId: deps.chainId, tokens: deps.tokens, signers: [deps.relayer], extensions: [BUILDER_CODE_EXTENSION, PAYMENT_IDENTIFIER_EXTENSION] });

  /** Every check of verify; the refusal, or undefined when the token would accept the transfer now. */
  async function judge(request: ExactPaymentRequest): Promise<Refusal | undefined> {
    const fields = checkExactFields(request, policy, BigInt(Math.floor(Date.now() / 1000)));
    if (fields !== undefined) return fields;
    const { authorization, requirements } = request;
    const token = deps.tokens.find((t) => t.address.toLowerCase() === requirements.asset.toLowerCase())!;
    const domain: TokenDomain = { name: token.name, version: token.version, chainId: deps.chainId, verifyingContract: token.address };
    try {
      await verifyTransferAuthorization(client, domain, "transfer", authorization, request.signature);
    } catch (error) {
      if (error instanceof BadSignatureError || error instanceof WrongSignerError) return refuse(R.invalidSignature, error.shortMessage);
      throw error;
    }
    if (await readAuthorizationState(client, token.address, authorization.from, authorization.nonce, "pending"))
      return refuse(R.nonceAlreadyUsed, `the nonce ${authorization.nonce} of ${authorization.from} is already used or canceled`);
    const balance = await balanceOf(token.address, authorization.from);
    if (balance < authorization.value) return refuse(R.insufficientBalance, `${authorization.from} holds ${balance}, the payment is ${authorization.value}`);
    try {
      await simulateCapture(client, { token: token.address, kind: "transfer", ...authorization, signature: request.signature }, deps.relayer);
    } catch (error) {
      if (error instanceof CaptureRevertedError) return refusalOfFailedSimulation({ revertReason: error.reason }, authorization.value);
      throw error;
    }
    return undefined;
  }

  async function balanceOf(token: Address, account: Address): Promise<bigint> {
    const data = encodeFunctionData({ abi: BALANCE_ABI, functionName: "balanceOf", args: [account] });
    const answer = await rpc("reading the payer's balance", () => client.request("eth_call", [{ to: token, data }, "pending"], parseData));
    return decodeFunctionResult({ abi: BALANCE_ABI, functionName: "balanceOf", data: answer });
  }

  function count(endpoint: "verify" | "settle", outcome: string): void {
    deps.metrics.settleRequests.inc({ endpoint, outcome });
  }

  /** The order holding this payment, if one was recorded before (by an earlier /settle, or `order add`). */
  async function recorded(request: ExactPaymentRequest): Promise<Order | undefined> {
    const { authorization, requirements } = request;
    return store.captures.findOrder(deps.chainId, requirements.asset, authorization.from, authorization.nonce);
  }

  /** Records the payment and captures it (or finds the capture already under way), then waits for it as configured. */
  async function settleRequest(request: ExactPaymentRequest, signal: AbortSignal | undefined): Promise<Answer<SettleResponse>> {
    const { authorization, requirements } = request;
    const payer = authorization.from;
    const identifier = readPaymentIdentifier(request.paymentPayload);
    if (identifier.kind === "invalid") return refused(identifier.refusal, payer);
    if (identifier.kind === "present") {
      const bound = await store.captures.getPaymentId(identifier.id);
      if (bound !== undefined && bound.fingerprint !== identifier.fingerprint) return refused(paymentIdentifierConflict(identifier.id), payer);
    }

    let order = await recorded(request);
    if (order !== undefined && (BigInt(order.value) !== authorization.value || order.payee.toLowerCase() !== authorization.to.toLowerCase()))
      return refused(refuse(R.nonceAlreadyUsed, `the nonce ${authorization.nonce} of ${payer} belongs to another payment (order ${order.id})`), payer);
    const intent = order === undefined ? undefined : await store.captures.get(order.id);
    if (intent === undefined || intent.status === "abandoned") {
      const refusal = await judge(request);
      if (refusal !== undefined) return refused(refusal, payer);
    }
    if (order === undefined) {
      order = await store
        .addOrder(
          {
            chainId: deps.chainId,
            token: requirements.asset,
            authorizer: payer,
            payee: authorization.to,
            value: authorization.value,
            validAfter: Number(authorization.validAfter),
            validBefore: Number(authorization.validBefore),
            nonce: authorization.nonce,
            kind: "transfer",
            signature: request.signature,
            source: "x402",
          },
          Date.now(),
        )
        .catch(async (error: unknown) => {
          // The same payment settled side by side: the other request recorded it first.
          if (error instanceof OrderExistsError) return (await recorded(request))!;
          throw error;
        });
    }
    if (identifier.kind === "present") {
      const bound = await store.captures.bindPaymentId({ paymentId: identifier.id, fingerprint: identifier.fingerprint, orderId: order.id }, Date.now());
      if (bound.fingerprint !== identifier.fingerprint) return refused(paymentIdentifierConflict(identifier.id), payer);
    }
    const suffix = builderCodeSuffix(readPayloadBuilderCodes(request.extensions), deps.builderCode);
    const sent = await relay.capture(order.id, { suffix });
    const seen = await relay.waitFor(order.id, { confirmations: deps.settleWaitsFor === "confirmed" ? 1 : 0, timeoutMs: deps.settleTimeoutMs, signal });
    logger.info({ msg: "Settled payment", order_id: order.id, tx_hash: seen.txHash, status: seen.status, already_sent: sent.alreadySent, payer });
    return { status: 200, body: settleSucceeded({ transaction: seen.txHash, network, payer, amount: authorization.value }) };
  }

  function refused(refusal: Refusal, payer?: Address): Answer<SettleResponse> {
    return { status: refusalStatus(refusal), body: settleRefused(refusal, network, payer) };
  }

  return {
    supported: () => supported,

    async verify(body) {
      const parsed = parseFacilitatorRequest(body);
      let answer: Answer<VerifyResponse>;
      if (!parsed.ok) answer = { status: refusalStatus(parsed.refusal), body: verifyRefused(parsed.refusal, parsed.payer) };
      else {
        const payer = parsed.request.authorization.from;
        try {
          const refusal = await judge(parsed.request);
          answer = refusal === undefined ? { status: 200, body: verifyAccepted(payer) } : { status: refusalStatus(refusal), body: verifyRefused(refusal, payer) };
        } catch (error) {
          logger.warn({ msg: "Failed to verify payment", error: message(error) });
          answer = { status: 200, body: verifyRefused(refuse(R.unexpectedVerifyError, message(error)), payer) };
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
          logger.warn({ msg: "Failed to settle payment", payer, error: message(error) });
          if (error instanceof CaptureTimeoutError) answer = { status: ANSWER_STATUS.ok, body: settlePending({ transaction: error.txHash, network, payer, message: message(error) }) };
          else answer = refused(refuse(error instanceof CaptureRevertedError ? R.transactionFailed : R.unexpectedSettleError, message(error)), payer);
        }
      }
      count("settle", answer.body.success ? "success" : (answer.body.errorReason ?? "failed"));
      const outcome = answer.body.success ? "success" : answer.body.errorReason === R.settlementPending ? "pending" : "refused";
      deps.metrics.settleLatency.observe({ outcome }, (performance.now() - started) / 1000);
      return answer;
    },
  };
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
    const line = at instanceof BaseError ? at.shortMessage : at instanceof Error ? at.message : String(at);
    if (!lines.some((seen) => seen.includes(line))) lines.push(line);
    at = at instanceof Error ? at.cause : undefined;
  }
  return lines.join(" <- ").replace(/\s+/g, " ").slice(0, MAX_DETAIL_CHARS);
}
