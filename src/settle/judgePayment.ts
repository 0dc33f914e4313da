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
  toTokenEcdsaSignature,
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

/** Whether the token's v, r, s overload can carry `signature` (65 bytes, v 27 or 28, a low s). */
function carriesAsVrs(signature: Hex): boolean {
  try {
    toTokenEcdsaSignature(signature);
    return true;
  } catch {
    return false;
  }
}

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
 * the fields, then one eth_estimateGas of the transfer at the pending view, which runs the token's
 * own checks (the signature's among them) and measures the settle's gas; the signature is
 * recovered here, and the payer's code, the nonce and the balance read, only to name a revert (or
 * first, for a signature the v, r, s overload cannot carry).
 */
export function createPaymentJudge(deps: PaymentJudgeDeps) {
  const { client, policy } = deps;

  /** The EIP-712 domain of a configured token (checkExactFields has refused any other asset). */
  function domainOf(asset: Address): TokenDomain {
    const token = deps.tokens.find((t) => t.address.toLowerCase() === asset.toLowerCase())!;
    return {
      name: token.name,
      version: token.version,
      chainId: deps.chainId,
      verifyingContract: token.address,
    };
  }

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
    const domain = domainOf(requirements.asset);
    const call = {
      token: domain.verifyingContract,
      kind: "transfer" as const,
      ...authorization,
      signature: request.signature,
    };
    const recovers = () =>
      recoversToAuthorizer(domain, "transfer", authorization, request.signature);
    if (followUp !== undefined) {
      // Its own transaction has changed the state since: the signature alone, checked here.
      if (await recovers()) return { refusal: undefined, overload: "vrs" };
      const checked = await checkedSignature(domain, authorization, request.signature);
      return "refusal" in checked ? checked : { refusal: undefined, overload: checked.overload };
    }
    const estimate = (overload: CaptureOverload) =>
      estimateCapture(client, call, deps.relayer, { overload, suffix: suffixOf(request) }).then(
        ({ gas }) => ({ gas }),
        (error: unknown) => {
          if (error instanceof CaptureRevertedError) return { reverted: error };
          throw error;
        },
      );
    // A signature of ECDSA's form goes to the token as v, r, s at once: the node runs the
    // transfer (the token's own checks of the signature, the nonce and the balance, on the pending
    // view) and measures its gas, in one call. Every FiatToken version recovers v, r, s itself
    // (v2.2 hands the same bytes to a payer with code), so its acceptance is the chain's answer;
    // recovering it here, the costliest step of a settle on the daemon's CPU, is left to naming
    // a refusal.
    let revertedAsVrs: { reverted: CaptureRevertedError } | undefined;
    if (carriesAsVrs(request.signature)) {
      const tried = await estimate("vrs");
      if ("gas" in tried) return { refusal: undefined, overload: "vrs", gas: tried.gas };
      // Told apart in the order verify has always reported: signature, nonce, balance, the rest.
      // A signature that recovers to the payer is checked from the payer's code (a wallet or a
      // delegated EOA judges it, not ECDSA).
      if (await recovers()) return refusalAfterRevert(request, tried.reverted, true);
      revertedAsVrs = tried;
    }
    // Any other signature is checked as the token checks it, from the payer's code, then run.
    const checked = await checkedSignature(domain, authorization, request.signature);
    if ("refusal" in checked) return checked;
    const tried =
      checked.overload === "vrs" && revertedAsVrs !== undefined
        ? revertedAsVrs
        : await estimate(checked.overload);
    if ("gas" in tried) return { refusal: undefined, overload: checked.overload, gas: tried.gas };
    return refusalAfterRevert(request, tried.reverted, false);
  }

  /**
   * Why the token refused a transfer the estimate ran: the signature (checked from the payer's code
   * when `checkSignature`), the nonce, the balance, then the token's reason.
   */
  async function refusalAfterRevert(
    request: ExactPaymentRequest,
    reverted: CaptureRevertedError,
    checkSignature: boolean,
  ): Promise<{ refusal: Refusal }> {
    if (checkSignature) {
      const domain = domainOf(request.requirements.asset);
      const checked = await checkedSignature(domain, request.authorization, request.signature);
      if ("refusal" in checked) return checked;
    }
    const refusal =
      (await refusalOfState(request)) ??
      refusalOfFailedSimulation({ revertReason: reverted.reason }, request.authorization.value);
    return { refusal };
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
