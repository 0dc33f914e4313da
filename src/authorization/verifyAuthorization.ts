import { isAddressEqual, recoverTypedDataAddress, serializeSignature, type Address, type Hex } from "viem";
import { AUTHORIZATION_TYPES, type TokenDomain, type TransferAuthorization } from "./eip3009.js";
import { BaseError } from "../errors.js";

export type AuthorizationKind = "transfer" | "receive";
/** A signature as 65 bytes (r || s || v) or as its parts. */
export type SignatureInput = Hex | { v: number; r: Hex; s: Hex };

/** The signature does not recover to the authorization's `from` (exit 1). */
export class WrongSignerError extends BaseError {
  override name = "WrongSignerError";
}
/** The signature cannot be parsed or recovered at all (exit 1). */
export class BadSignatureError extends BaseError {
  override name = "BadSignatureError";
}

/** The 65-byte r || s || v form of a signature; v must be 27 or 28 (FiatToken's ECRecover accepts no other). */
export function toSignatureBytes(signature: SignatureInput): Hex {
  if (typeof signature === "string") {
    if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) throw new BadSignatureError(`signature must be 65 bytes of hex (0x + 130 digits), got ${signature.length - 2} digits`);
    return signature.toLowerCase() as Hex;
  }
  if (signature.v !== 27 && signature.v !== 28) throw new BadSignatureError(`signature v must be 27 or 28, got ${signature.v}`);
  return serializeSignature({ r: signature.r, s: signature.s, v: BigInt(signature.v) });
}

/**
 * Recovers the signer of a TransferWithAuthorization (kind transfer) or ReceiveWithAuthorization
 * (kind receive) under `domain` and returns the 65-byte signature; throws WrongSignerError when
 * the signer is not `message.from`.
 */
export async function verifyTransferAuthorization(
  domain: TokenDomain,
  kind: AuthorizationKind,
  message: TransferAuthorization,
  signature: SignatureInput,
): Promise<{ signer: Address; signature: Hex }> {
  const bytes = toSignatureBytes(signature);
  let signer: Address;
  try {
    signer = await recoverTypedDataAddress({
      domain,
      types: AUTHORIZATION_TYPES,
      primaryType: kind === "transfer" ? "TransferWithAuthorization" : "ReceiveWithAuthorization",
      message,
      signature: bytes,
    });
  } catch (error) {
    throw new BadSignatureError("signature does not recover to any address", { cause: error, details: (error as Error).message });
  }
  if (!isAddressEqual(signer, message.from))
    throw new WrongSignerError(`signature was made by ${signer}, not by from ${message.from}: refused`);
  return { signer, signature: bytes };
}
