import type { Address, Hex } from "viem";

/**
 * The x402 v2 wire format of a facilitator (x402-specification-v2.md §5 and §7), field for field as
 * `HTTPFacilitatorClient` of @x402/core 2.27 sends and reads it: it POSTs
 * `{ x402Version, paymentPayload, paymentRequirements }` to /verify and /settle and parses the
 * answers with zod schemas that require `isValid` (verify), `success`, `transaction` and `network`
 * (settle), and `kinds` (supported). Numbers of the exact scheme travel as decimal strings. x402
 * v1's shapes (specs/x402-specification-v1.md) are read too, as @x402/evm's ExactEvmSchemeV1 reads them.
 */

/** The protocol version this facilitator speaks first; v1 requests are served as the reference does. */
export const X402_VERSION = 2;
/** x402 v1 (the reference's ExactEvmSchemeV1): `maxAmountRequired`, networks named `base`, … */
export const X402_VERSION_V1 = 1;
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

/**
 * x402 v1's EVM network names and their chain ids, exactly @x402/evm 2.27's
 * EVM_NETWORK_CHAIN_ID_MAP (src/constants.ts), whose facilitator registers its v1 exact scheme
 * on every one of them.
 */
const V1_EVM_NETWORKS: Readonly<Record<string, number>> = {
  ethereum: 1,
  sepolia: 11155111,
  abstract: 2741,
  "abstract-testnet": 11124,
  "base-sepolia": 84532,
  base: 8453,
  "avalanche-fuji": 43113,
  avalanche: 43114,
  iotex: 4689,
  sei: 1329,
  "sei-testnet": 1328,
  polygon: 137,
  "polygon-amoy": 80002,
  peaq: 3338,
  story: 1514,
  educhain: 41923,
  "skale-base-sepolia": 324705682,
  megaeth: 4326,
  monad: 143,
  stable: 988,
  "stable-testnet": 2201,
  celo: 42220,
  flare: 14,
};

/** The chain id of a v1 network name (`base` → 8453), or undefined for a name v1 does not know. */
export function v1NetworkChainId(name: string): number | undefined {
  return Object.hasOwn(V1_EVM_NETWORKS, name) ? V1_EVM_NETWORKS[name] : undefined;
}

/** The v1 name of a chain (8453 → `base`), or undefined when v1 has none. */
export function v1NetworkName(chainId: number): string | undefined {
  return Object.keys(V1_EVM_NETWORKS).find((name) => V1_EVM_NETWORKS[name] === chainId);
}

/** The chain id a network names, CAIP-2 (`eip155:8453`) or v1 (`base`); undefined otherwise. */
export function networkChainId(network: string): number | undefined {
  const match = /^eip155:([1-9][0-9]{0,15})$/.exec(network);
  if (match === null) return v1NetworkChainId(network);
  const chainId = Number(match[1]);
  return Number.isSafeInteger(chainId) ? chainId : undefined;
}

/** A network name worth echoing: CAIP-2's character set, bounded. Anything else is not repeated. */
const ECHOABLE_NETWORK = /^[-_a-zA-Z0-9:]{1,64}$/;

/**
 * The network a /settle body names, as the reference echoes it in every answer:
 * `paymentPayload.accepted.network` (v2), `paymentPayload.network` (v1), else
 * `paymentRequirements.network`. Undefined when none is a short network-like string.
 */
export function namedNetwork(body: unknown): string | undefined {
  const payload = field(body, "paymentPayload");
  const candidates = [
    field(field(payload, "accepted"), "network"),
    field(payload, "network"),
    field(field(body, "paymentRequirements"), "network"),
  ];
  return candidates.find(
    (candidate): candidate is string =>
      typeof candidate === "string" && ECHOABLE_NETWORK.test(candidate),
  );
}

/** `value[key]` when `value` is a JSON object, else undefined. */
function field(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
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
  authorization: {
    from: string;
    to: string;
    value: string;
    validAfter: string;
    validBefore: string;
    nonce: string;
  };
};

/** PaymentPayload as sent (§5.2.2). */
export type WirePaymentPayload = {
  x402Version: number;
  resource?: { url: string; description?: string; mimeType?: string } | null;
  accepted: WirePaymentRequirements;
  payload: Record<string, unknown>;
  extensions?: Record<string, unknown> | null;
};

/** x402 v1's PaymentPayload: the scheme and network named in the payload itself. */
export type WirePaymentPayloadV1 = {
  x402Version: 1;
  scheme: string;
  network: string;
  payload: Record<string, unknown>;
  /** v1 has none; a v1 payload's extensions are dropped when read. */
  extensions?: never;
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
export type SupportedKind = {
  x402Version: number;
  scheme: string;
  network: string;
  extra?: Record<string, unknown>;
};

/** The answer of GET /supported (§7.3). */
export type SupportedResponse = {
  kinds: SupportedKind[];
  extensions: string[];
  signers: Record<string, string[]>;
};

/** The requirements of an exact EIP-3009 payment once parsed: addresses checksummed, amounts as bigints. */
export type ExactRequirements = {
  scheme: typeof SCHEME_EXACT;
  /** As the request named it: CAIP-2 (`eip155:8453`) in v2, a v1 name (`base`) in v1. */
  network: string;
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
export type ExactAuthorization = {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
};

/** A /verify or /settle request that passed parsing: every field well-formed, nothing yet judged. */
export type ExactPaymentRequest = {
  /** 2, or 1 for a request in x402 v1's shape (served as the reference's ExactEvmSchemeV1 serves it). */
  x402Version: typeof X402_VERSION | typeof X402_VERSION_V1;
  requirements: ExactRequirements;
  authorization: ExactAuthorization;
  /** As sent: 65 bytes (r ‖ s ‖ v) for a key, any length for a smart wallet (ERC-1271). */
  signature: Hex;
  /** `paymentPayload.extensions`, an empty object when absent. */
  extensions: Record<string, unknown>;
  /** The payment payload exactly as received (v1: without extensions), for the payment-identifier fingerprint. */
  paymentPayload: WirePaymentPayload | WirePaymentPayloadV1;
};
