import { concat, encodeFunctionData, type Address, type Hex } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import { isExecutionReverted, RpcRequestError } from "../errors/rpc.js";
import { CaptureRevertedError } from "../errors/capture.js";
import { parseData, parseQuantity, revertReason, rpc } from "./cancelRelay.js";
import { EIP3009_ABI } from "./eip3009Abi.js";
import { toTokenEcdsaSignature, type AuthorizationKind } from "./verifyAuthorization.js";

/** One transferWithAuthorization / receiveWithAuthorization as the token will run it; times in unix seconds. */
export type CaptureCall = {
  token: Address;
  kind: AuthorizationKind;
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  /** As stored: 65 bytes r ‖ s ‖ v (v 27/28) from an EOA, or a wallet's signature of any length. */
  signature: Hex;
};

/** `vrs` for an authorizer without code (works on every FiatToken version), `bytes` for a wallet: handed over verbatim. */
export type CaptureOverload = "vrs" | "bytes";

/**
 * The calldata of the capture, with an ERC-8021 suffix appended when given (the token's ABI decoder
 * ignores trailing bytes; the indexer reads them back).
 */
export function captureCallData(call: CaptureCall, overload: CaptureOverload, suffix?: Hex): Hex {
  const functionName =
    call.kind === "transfer" ? "transferWithAuthorization" : "receiveWithAuthorization";
  const head = [
    call.from,
    call.to,
    call.value,
    call.validAfter,
    call.validBefore,
    call.nonce,
  ] as const;
  let data: Hex;
  if (overload === "vrs") {
    const { v, r, s } = toTokenEcdsaSignature(call.signature);
    data = encodeFunctionData({ abi: EIP3009_ABI, functionName, args: [...head, v, r, s] });
  } else
    data = encodeFunctionData({ abi: EIP3009_ABI, functionName, args: [...head, call.signature] });
  return suffix === undefined || suffix === "0x" ? data : concat([data, suffix]);
}

/** The overload the token's own check takes: the authorizer's code (at `pending`) decides, as in FiatToken v2.2. */
export async function captureOverload(
  client: RpcClient,
  call: Pick<CaptureCall, "from" | "signature">,
): Promise<CaptureOverload> {
  const code = await rpc("reading the authorizer's code", () =>
    client.request("eth_getCode", [call.from, "pending"], parseData),
  );
  return overloadForCode(code, call.signature);
}

/** The overload for an authorizer with `code` ("0x": none): ECDSA parts only for a 65-byte signature of an account without code. */
export function overloadForCode(code: Hex, signature: Hex): CaptureOverload {
  return code === "0x" && signature.length === 132 ? "vrs" : "bytes";
}

/**
 * Runs the capture with eth_call from `caller` (the relayer, or the payee) on the pre-confirmed state
 * (`pending`: a Flashblocks node's view, so a payer's earlier payments count). This covers what a
 * signature check alone cannot: a wallet whose isValidSignature writes state, pause, blacklist, the
 * validity window, the balance, the nonce. A revert throws CaptureRevertedError with the token's reason.
 */
export async function simulateCapture(
  client: RpcClient,
  call: CaptureCall,
  caller: Address,
  options: { suffix?: Hex | undefined; overload?: CaptureOverload | undefined } = {},
): Promise<{ data: Hex; overload: CaptureOverload }> {
  const overload = options.overload ?? (await captureOverload(client, call));
  const data = captureCallData(call, overload, options.suffix);
  await rpc(`simulating ${functionOf(call)}`, () =>
    client.request("eth_call", [{ from: caller, to: call.token, data }, "pending"], parseData),
  ).catch(refusalOf(call));
  return { data, overload };
}

/**
 * eth_estimateGas of the capture from `caller` at `pending`: the node runs the call to measure it,
 * so this is simulateCapture's check with the gas in the same round trip. A revert throws
 * CaptureRevertedError with the token's reason. `pending`, as verify reads: a payer funded by a
 * pre-confirmed transfer must not pass verify and fail here (geth and reth estimate at `latest`
 * without a tag).
 */
export async function estimateCapture(
  client: RpcClient,
  call: CaptureCall,
  caller: Address,
  options: { suffix?: Hex | undefined; overload: CaptureOverload },
): Promise<{ data: Hex; gas: bigint }> {
  const data = captureCallData(call, options.overload, options.suffix);
  const gas = await rpc(`estimating the gas of ${functionOf(call)}`, () =>
    client.request(
      "eth_estimateGas",
      [{ from: caller, to: call.token, data }, "pending"],
      parseQuantity,
    ),
  ).catch(refusalOf(call));
  return { data, gas };
}

function functionOf(call: Pick<CaptureCall, "kind">): string {
  return call.kind === "transfer" ? "transferWithAuthorization" : "receiveWithAuthorization";
}

/**
 * What a call's or estimate's failure means: a revert is the token refusing the capture
 * (CaptureRevertedError with its reason); any other answer is a failure of the node, rethrown.
 */
function refusalOf(call: CaptureCall): (error: unknown) => never {
  return (error) => {
    if (!(error instanceof RpcRequestError) || !isExecutionReverted(error)) throw error;
    const reason = revertReason(error);
    throw new CaptureRevertedError(
      `the token refuses ${functionOf(call)} of ${call.nonce} from ${call.from}: ${reason}; nothing was sent`,
      reason,
      undefined,
      { cause: error },
    );
  };
}
