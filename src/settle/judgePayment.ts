import { decodeFunctionResult, encodeFunctionData, parseAbi, type Address, type Hex } from "viem";
import { parseData, rpc } from "../authorization/cancelRelay.js";
import type { TokenDomain } from "../authorization/eip3009.js";
import {
  estimateCapture,
  overloadForCode,
  type CaptureOverload,
} from "../authorization/simulateCapture.js";
import { readAuthorizationState } from "../authorization/tokenReads.js";
import {
  BadSignatureError,
  readAuthorizerCode,
  recoversToAuthorizer,
  verifyTransferAuthorization,
  WrongSignerError,
} from "../authorization/verifyAuthorization.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { CaptureRevertedError } from "../errors/capture.js";
import { builderCodeSuffix, readPayloadBuilderCodes } from "./builderCode.js";
import { checkExactFields, type ExactPolicy, type FacilitatorToken } from "./exactFieldChecks.js";
import { INVALID_REASONS as R, refuse, type Refusal } from "./invalidReasons.js";
import { refusalOfFailedSimulation } from "./simulationRefusal.js";
import type { ExactAuthorization, ExactPaymentRequest } from "./wire.js";

const BALANCE_ABI = parseAbi(["function balanceOf(address account) view returns (uint256)"]);

/** What judging a payment found: why it is refused, or the token call overload its capture takes and its gas. */
export type Judgement =
  | { refusal: Refusal }
  | { refusal: undefined; overload: CaptureOverload; gas?: bigint | undefined };

export type PaymentJudgeDeps = {
  client: RpcClient;
  chainId: number;
  /** The configured tokens with their EIP-712 domains. */
  tokens: readonly FacilitatorToken[];
  /** The relayer the estimate runs from (the pool's first). */
  relayer: Address;
  /** The facilitator's own ERC-8021 code (w), if any. */
  builderCode: string | undefined;
  policy: ExactPolicy;
};

/**
 * How the facilitator judges a payment as the token will (verify, and settle before it claims):
 * the fields, the signature (locally when it is the payer's ECDSA one), then one eth_estimateGas of
 * the transfer at the pending view, which runs the token's own checks and measures the settle's gas;
 * the payer's code, the nonce and the balance are read only to name a revert.
 */
export function createPaymentJudge(deps: PaymentJudgeDeps) {
  const { client, policy } = deps;

  /**
   * Every check of verify: the refusal, or the overload and gas the token would accept the transfer with now.
   * `followUp`: the repeat of a payment already sent and answered `settlement_pending`, judged as
   * of when it was first settled (`asOfSeconds`): its fields and signature, not the nonce's state,
   * the balance or a simulation, which its own transaction has changed since.
   */
  async function judge(
    request: ExactPaymentRequest,
    followUp?: { asOfSeconds: bigint },
  ): Promise<Judgement> {
    const fields = checkExactFields(
      request,
      policy,
      followUp?.asOfSeconds ?? BigInt(Math.floor(Date.now() / 1000)),
    );
    if (fields !== undefined) return { refusal: fields };
    const { authorization, requirements } = request;
    const token = deps.tokens.find(
      (t) => t.address.toLowerCase() === requirements.asset.toLowerCase(),
    )!;
    const domain: TokenDomain = {
      name: token.name,
      version: token.version,
      chainId: deps.chainId,
      verifyingContract: token.address,
    };
    const call = {
      token: token.address,
      kind: "transfer" as const,
      ...authorization,
      signature: request.signature,
    };
    // An ECDSA signature that recovers to the payer needs no read: the token takes its v, r, s on
    // every FiatToken version (v2.2 hands them to the payer's wallet when it has code, as it would
    // the same bytes). Any other is checked as the token checks it, from the payer's code.
    let overload: CaptureOverload = "vrs";
    const recovered = await recoversToAuthorizer(
      domain,
      "transfer",
      authorization,
      request.signature,
    );
    if (!recovered) {
      const checked = await checkedSignature(domain, authorization, request.signature);
      if ("refusal" in checked) return checked;
      overload = checked.overload;
    }
    if (followUp !== undefined) return { refusal: undefined, overload };
    try {
      // The node runs the transfer to estimate it: the token's own checks of the signature, the
      // nonce and the balance, on the pending view, and the gas the capture needs, in one call.
      const { gas } = await estimateCapture(client, call, deps.relayer, {
        overload,
        suffix: suffixOf(request),
      });
      return { refusal: undefined, overload, gas };
    } catch (error) {
      if (!(error instanceof CaptureRevertedError)) throw error;
      // Told apart in the order verify has always reported: signature, nonce, balance, the rest.
      // A signature checked the long way above passed already; a recovered one is checked now
      // from the payer's code (a wallet or a delegated EOA judges it, not ECDSA).
      if (recovered) {
        const checked = await checkedSignature(domain, authorization, request.signature);
        if ("refusal" in checked) return checked;
      }
      const refusal =
        (await refusalOfState(request)) ??
        refusalOfFailedSimulation({ revertReason: error.reason }, authorization.value);
      return { refusal };
    }
  }

  /**
   * The signature checked as FiatToken v2.2 does, from the payer's code at the pending view (the
   * state the token runs on, a wallet deployed or an EOA delegated by EIP-7702 in a pre-confirmed
   * transaction included): the token call overload it takes, or the refusal.
   */
  async function checkedSignature(
    domain: TokenDomain,
    authorization: ExactAuthorization,
    signature: Hex,
  ): Promise<{ refusal: Refusal } | { overload: CaptureOverload }> {
    const code = await rpc("reading the authorizer's code", () =>
      readAuthorizerCode(client, authorization.from, "pending"),
    );
    try {
      await verifyTransferAuthorization(client, domain, "transfer", authorization, signature, {
        code,
      });
    } catch (error) {
      if (error instanceof BadSignatureError || error instanceof WrongSignerError)
        return { refusal: refuse(R.invalidSignature, error.shortMessage) };
      throw error;
    }
    return { overload: overloadForCode(code, signature) };
  }

  /** The ERC-8021 suffix a settle of `request` appends: the payload's codes and the facilitator's own. */
  function suffixOf(request: ExactPaymentRequest): Hex | undefined {
    return builderCodeSuffix(readPayloadBuilderCodes(request.extensions), deps.builderCode);
  }

  /** Why a transfer the token refused was refused, when its nonce or the payer's balance says so. */
  async function refusalOfState(request: ExactPaymentRequest): Promise<Refusal | undefined> {
    const { authorization, requirements } = request;
    if (
      await readAuthorizationState(
        client,
        requirements.asset,
        authorization.from,
        authorization.nonce,
        "pending",
      )
    )
      return refuse(
        R.nonceAlreadyUsed,
        `the nonce ${authorization.nonce} of ${authorization.from} is already used or canceled`,
      );
    const balance = await balanceOf(requirements.asset, authorization.from);
    if (balance < authorization.value)
      return refuse(
        R.insufficientBalance,
        `${authorization.from} holds ${balance}, the payment is ${authorization.value}`,
      );
    return undefined;
  }

  async function balanceOf(token: Address, account: Address): Promise<bigint> {
    const data = encodeFunctionData({
      abi: BALANCE_ABI,
      functionName: "balanceOf",
      args: [account],
    });
    const answer = await rpc("reading the payer's balance", () =>
      client.request("eth_call", [{ to: token, data }, "pending"], parseData),
    );
    return decodeFunctionResult({ abi: BALANCE_ABI, functionName: "balanceOf", data: answer });
  }

  return { judge, suffixOf };
}
