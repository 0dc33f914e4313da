import type { Address, Hex } from "viem";

/**
 * The x402 v2 wire format of a facilitator (x402-specification-v2.md §5 and §7), field for field as
 * `HTTPFacilitatorClient` of @x402/core 2.27 sends and reads it: it POSTs
 * `{ x402Version, paymentPayload, paymentRequirements }` to /verify and /settle and parses the
 * answers with zod schemas that require `isValid` (verify), `success`, `transaction` and `network`
 * (settle), and `kinds` (supported). Numbers of the exact scheme travel as decimal strings.
 */

/** The only protocol version this facilitator speaks. */
export const X402_VERSION = 2;
/** The only scheme: EIP-3009 `transferWithAuthorization` for exactly the required amount. */
export const SCHEME_EXACT = "exact";
/** `extra.assetTransferMethod` of the exact scheme this facilitator settles; absent means the same. */
export const ASSET_TRANSFER_EIP3009 = "eip3009";
/** The signer family key of `/supported`'s `signers`, as the reference's EVM schemes name it. */
export const EVM_SIGNER_FAMILY = "eip155:*";
/** Extension keys (specs/extensions/). */
export const BUILDER_CODE_EXTENSION = "builder-code";
export const PAYMENT_IDENTIFIER_EXTENSION = "payment-identifier";

/** A CAIP-2 network of the EVM family, e.g. `eip155:8453`. */
export type EvmNetwork = `eip155:${number}`;

/** The CAIP-2 name of an EVM chain. */
export function evmNetwork(chainId: number): EvmNetwork {
  return `eip155:${chainId}`;
}

/** PaymentRequirements as sent (§5.1.2); `extra` carries the token's EIP-712 `name` and `version`. */
export type WirePaymentRequirements = {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: Record<string, unknown> | null;
};

/** The exact scheme's payload on EVM (scheme_exact_evm.md): a signed EIP-3009 authorization. */
export type WireExactEvmPayload = {
  signature: string;
  authorization: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };
};

/** PaymentPayload as sent (§5.2.2). */
export type WirePaymentPayload = {
  x402Version: number;
  resource?: { url: string; description?: string; mimeType?: string } | null;
  accepted: WirePaymentRequirements;
  payload: Record<string, unknown>;
  extensions?: Record<string, unknown> | null;
};

/** The body of POST /verify and POST /settle (§7.1, §7.2). */
export type FacilitatorRequestBody = {
  x402Version: number;
  paymentPayload: WirePaymentPayload;
  paymentRequirements: WirePaymentRequirements;
};

/** The answer of POST /verify (§5.4); `invalidMessage` is the human half of a refusal. */
export type VerifyResponse = {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
};

/** The answer of POST /settle (§5.3); `transaction` is "" when nothing was settled. */
export type SettleResponse = {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  transaction: string;
  network: string;
  amount?: string;
  extensions?: Record<string, unknown>;
};

/** One entry of `/supported`'s `kinds` (§7.3.1). */
export type SupportedKind = { x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> };

/** The answer of GET /supported (§7.3). */
export type SupportedResponse = {
  kinds: SupportedKind[];
  extensions: string[];
  signers: Record<string, string[]>;
};

/** The requirements of an exact EIP-3009 payment once parsed: addresses checksummed, amounts as bigints. */
export type ExactRequirements = {
  scheme: typeof SCHEME_EXACT;
  network: EvmNetwork;
  chainId: number;
  /** Atomic token units, at least 1. */
  amount: bigint;
  asset: Address;
  payTo: Address;
  maxTimeoutSeconds: number;
  /** The token's EIP-712 domain name and version, as the client signed them. */
  name: string;
  version: string;
};

/** The EIP-3009 authorization once parsed; times in unix seconds. */
export type ExactAuthorization = { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex };

/** A /verify or /settle request that passed parsing: every field well-formed, nothing yet judged. */
export type ExactPaymentRequest = {
  requirements: ExactRequirements;
  authorization: ExactAuthorization;
  /** As sent: 65 bytes (r ‖ s ‖ v) for a key, any length for a smart wallet (ERC-1271). */
  signature: Hex;
  /** `paymentPayload.extensions`, an empty object when absent. */
  extensions: Record<string, unknown>;
  /** The payment payload exactly as received, for the payment-identifier fingerprint. */
  paymentPayload: WirePaymentPayload;
};
