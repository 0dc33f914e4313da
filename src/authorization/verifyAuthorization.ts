import {
  encodeFunctionData,
  hashTypedData,
  isAddressEqual,
  parseAbi,
  recoverAddress,
  serializeSignature,
  size,
  type Address,
  type Hex,
} from "viem";
import { isHexBytes } from "../chain/hexPatterns.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { RpcRequestError } from "../errors/rpc.js";
import { RetryableError } from "../errors/base.js";
import { BadSignatureError, WrongSignerError } from "../errors/cancel.js";
import {
  AUTHORIZATION_TYPES,
  toTokenV,
  type CancelAuthorizationMessage,
  type TokenDomain,
  type TransferAuthorization,
} from "./eip3009.js";

export { BadSignatureError, WrongSignerError };

export type AuthorizationKind = "transfer" | "receive";
/** A signature as bytes (65 for ECDSA, any length for a wallet) or as ECDSA parts. */
export type SignatureInput = Hex | { v: number; r: Hex; s: Hex };

/**
 * How the token checks the authorizer (circlefin/stablecoin-evm `contracts/v2/EIP3009.sol`,
 * `util/SignatureChecker.sol`): `ecdsa` for an authorizer without code
 * (the signature is then the 65-byte r ‖ s ‖ v with v 27/28 and low s, and `parts` holds it split),
 * `erc1271` for one with code (a wallet, or an EIP-7702 delegated EOA): the bytes as given.
 */
export type VerifiedSignature =
  | { scheme: "ecdsa"; signature: Hex; parts: { v: number; r: Hex; s: Hex } }
  | { scheme: "erc1271"; signature: Hex };

/** ERC-1271's selector, and the only return value FiatToken v2.2 accepts. */
export const ERC1271_MAGIC_VALUE: Hex = "0x1626ba7e";
/**
 * The first 32-byte word of the answer FiatToken's SignatureChecker accepts: the selector left-aligned,
 * then 28 zero bytes (it compares `abi.decode(result, (bytes32))`, not a bytes4).
 */
const ERC1271_MAGIC_WORD = `${ERC1271_MAGIC_VALUE}${"00".repeat(28)}`;
const ERC1271_ABI = parseAbi([
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
]);
/** The secp256k1 group order: an r at or above it recovers nothing (the ecrecover precompile returns zero). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/** Half the secp256k1 order: FiatToken's ECRecover refuses a higher s (EIP-2 malleability). */
const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/**
 * The 65-byte r ‖ s ‖ v signature FiatToken's ECRecover accepts, and its parts. v 0/1 (yParity, as
 * some signers produce) is mapped onto 27/28, so what is stored or sent is what the token accepts;
 * any other v, a high s, a zero r or s, or another length is a BadSignatureError.
 */
export function toTokenEcdsaSignature(input: SignatureInput): {
  signature: Hex;
  v: number;
  r: Hex;
  s: Hex;
} {
  let parts: { v: number; r: Hex; s: Hex };
  if (typeof input === "string") {
    if (!/^0x[0-9a-fA-F]*$/.test(input) || input.length % 2 !== 0)
      throw new BadSignatureError("the signature is not hex bytes");
    if (input.length !== 132)
      throw new BadSignatureError(
        `an authorizer without code signs with ECDSA: exactly 65 bytes r ‖ s ‖ v, got ${(input.length - 2) / 2} bytes`,
      );
    parts = {
      r: `0x${input.slice(2, 66)}`,
      s: `0x${input.slice(66, 130)}`,
      v: Number.parseInt(input.slice(130), 16),
    };
  } else parts = input;
  const v = toTokenV(parts.v);
  if (v !== 27 && v !== 28)
    throw new BadSignatureError(
      `v must be 27 or 28 (or 0/1), got ${parts.v}: the token refuses any other`,
    );
  if (!/^0x[0-9a-fA-F]{64}$/.test(parts.r) || !/^0x[0-9a-fA-F]{64}$/.test(parts.s))
    throw new BadSignatureError("r and s must be 32 bytes each");
  if (BigInt(parts.s) > SECP256K1_HALF_N)
    throw new BadSignatureError(
      "s is in the upper half of the curve order: the token refuses such (malleable) signatures",
    );
  if (BigInt(parts.r) === 0n || BigInt(parts.s) === 0n)
    throw new BadSignatureError("r and s must not be zero");
  if (BigInt(parts.r) >= SECP256K1_N)
    throw new BadSignatureError(
      "r must be below the curve order: the token's ecrecover recovers nothing from it",
    );
  const r = parts.r.toLowerCase() as Hex;
  const s = parts.s.toLowerCase() as Hex;
  return { signature: serializeSignature({ r, s, v: BigInt(v) }).toLowerCase() as Hex, v, r, s };
}

/**
 * The signature as bytes: ECDSA parts packed `abi.encodePacked(r, s, v)` as the token's v,r,s entry points
 * do, unchanged (no EOA rule applies: for a payer with code the wallet, not the token, judges them).
 * Parts that cannot be packed (r or s not 32 bytes, v not one byte) are a BadSignatureError.
 */
export function signatureBytes(input: SignatureInput): Hex {
  if (typeof input === "string") return input.toLowerCase() as Hex;
  const { v, r, s } = input;
  if (!/^0x[0-9a-fA-F]{64}$/.test(r) || !/^0x[0-9a-fA-F]{64}$/.test(s))
    throw new BadSignatureError("r and s must be 32 bytes each");
  if (!Number.isInteger(v) || v < 0 || v > 255)
    throw new BadSignatureError(
      `v must be one byte (0 to 255), got ${v}: the token packs it as a uint8`,
    );
  return `0x${r.slice(2)}${s.slice(2)}${v.toString(16).padStart(2, "0")}`.toLowerCase() as Hex;
}

/**
 * Checks `signature` over `digest` exactly as FiatToken v2.2 does: the authorizer's code (`code` when
 * the caller read it already, else eth_getCode at latest) picks the path; with code, ERC-1271
 * `isValidSignature` must answer a first 32-byte word of 0x1626ba7e and 28 zero bytes (a revert or
 * any other answer is a WrongSignerError) and v,r,s parts reach the wallet packed unchanged; without
 * code, ECDSA under the token's rules must recover the authorizer.
 */
export async function verifyAuthorizerSignature(
  client: RpcClient,
  authorizer: Address,
  digest: Hex,
  signature: SignatureInput,
  options: { code?: Hex | undefined } = {},
): Promise<VerifiedSignature> {
  const code = options.code ?? (await readAuthorizerCode(client, authorizer, "latest"));
  if (code !== "0x") {
    const bytes = signatureBytes(signature);
    const answer = await isValidSignature(client, authorizer, digest, bytes);
    if (answer !== ERC1271_MAGIC_VALUE)
      throw new WrongSignerError(
        `the authorizer ${authorizer} is ${describeCode(code)} and its isValidSignature refuses this signature (${answer})`,
      );
    return { scheme: "erc1271", signature: bytes };
  }
  const ecdsa = toTokenEcdsaSignature(signature);
  let signer: Address;
  try {
    signer = await recoverAddress({ hash: digest, signature: ecdsa.signature });
  } catch (error) {
    throw new BadSignatureError("the signature does not recover to any address", {
      cause: error,
      details: (error as Error).message,
    });
  }
  if (!isAddressEqual(signer, authorizer))
    throw new WrongSignerError(
      `the signature was made by ${signer}, not by from ${authorizer} (the authorizer): refused`,
    );
  return {
    scheme: "ecdsa",
    signature: ecdsa.signature,
    parts: { v: ecdsa.v, r: ecdsa.r, s: ecdsa.s },
  };
}

/** The EIP-712 digest the token checks for a TransferWithAuthorization or ReceiveWithAuthorization. */
export function transferAuthorizationDigest(
  domain: TokenDomain,
  kind: AuthorizationKind,
  message: TransferAuthorization,
): Hex {
  const primaryType =
    kind === "transfer" ? "TransferWithAuthorization" : "ReceiveWithAuthorization";
  return hashTypedData({ domain, types: AUTHORIZATION_TYPES, primaryType, message });
}

/** The EIP-712 digest the token checks for a CancelAuthorization. */
export function cancelAuthorizationDigest(
  domain: TokenDomain,
  message: CancelAuthorizationMessage,
): Hex {
  return hashTypedData({
    domain,
    types: AUTHORIZATION_TYPES,
    primaryType: "CancelAuthorization",
    message,
  });
}

/**
 * Verifies a TransferWithAuthorization (kind transfer) or ReceiveWithAuthorization (kind receive) as the
 * token will when it is captured, and returns the signature to store (ECDSA normalised to v 27/28).
 */
export async function verifyTransferAuthorization(
  client: RpcClient,
  domain: TokenDomain,
  kind: AuthorizationKind,
  message: TransferAuthorization,
  signature: SignatureInput,
  options: { code?: Hex | undefined } = {},
): Promise<VerifiedSignature> {
  return verifyAuthorizerSignature(
    client,
    message.from,
    transferAuthorizationDigest(domain, kind, message),
    signature,
    options,
  );
}

/** The authorizer's code at `blockTag` (lower case; "0x" for none): it picks the token's signature check. */
export async function readAuthorizerCode(
  client: RpcClient,
  authorizer: Address,
  blockTag: "latest" | "pending",
): Promise<Hex> {
  return client.request("eth_getCode", [authorizer, blockTag], parseCode);
}

/**
 * `isValidSignature(digest, signature)` on the authorizer: ERC1271_MAGIC_VALUE when its first 32-byte word
 * is exactly the one FiatToken accepts, else a description of the answer. A revert reads as a refusal
 * (FiatToken: the staticcall was not successful).
 */
async function isValidSignature(
  client: RpcClient,
  wallet: Address,
  digest: Hex,
  signature: Hex,
): Promise<string> {
  const data = encodeFunctionData({
    abi: ERC1271_ABI,
    functionName: "isValidSignature",
    args: [digest, signature],
  });
  let result: Hex;
  try {
    result = await client.request("eth_call", [{ to: wallet, data }, "latest"], parseHexData);
  } catch (error) {
    if (error instanceof RpcRequestError) return `reverted: ${error.shortMessage}`;
    throw error;
  }
  // FiatToken's SignatureChecker compares the whole first 32-byte word with the selector left-aligned and
  // zero-padded: 0x1626ba7e followed by anything else is a refusal there, so it is one here.
  if (size(result) < 32) return `${result} (shorter than 32 bytes)`;
  const word = result.slice(0, 66);
  return word === ERC1271_MAGIC_WORD ? ERC1271_MAGIC_VALUE : word;
}

function parseCode(result: unknown): Hex {
  if (typeof result !== "string" || !isHexBytes(result))
    throw new RetryableError(`eth_getCode returned ${JSON.stringify(result)} instead of code`);
  return result.toLowerCase() as Hex;
}

function parseHexData(result: unknown): Hex {
  if (typeof result !== "string" || !isHexBytes(result))
    throw new RetryableError(`eth_call returned ${JSON.stringify(result)} instead of ABI data`);
  return result.toLowerCase() as Hex;
}

/** An EIP-7702 delegation (0xef0100 ‖ address) or a contract, for the refusal message. */
function describeCode(code: Hex): string {
  return /^0xef0100[0-9a-f]{40}$/.test(code)
    ? `an EOA delegated to 0x${code.slice(8)} under EIP-7702`
    : "a smart-contract wallet";
}

/**
 * Whether `signature` is an ECDSA signature the token's ECRecover accepts (65 bytes, v 27/28 or
 * 0/1, low s) that recovers to the authorizer of `message`: the check that needs no read.
 */
export async function recoversToAuthorizer(
  domain: TokenDomain,
  kind: AuthorizationKind,
  message: TransferAuthorization,
  signature: SignatureInput,
): Promise<boolean> {
  try {
    const { signature: ecdsa } = toTokenEcdsaSignature(signature);
    const hash = transferAuthorizationDigest(domain, kind, message);
    return isAddressEqual(await recoverAddress({ hash, signature: ecdsa }), message.from);
  } catch {
    // Not of the token's ECDSA form, or recovering nothing: the caller checks it the long way.
    return false;
  }
}
