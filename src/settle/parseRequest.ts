import { checksum, validate } from "ox/Address";
import type { Address, Hex } from "viem";
import { describe } from "../config/fields.js";
import {
  INVALID_REASONS as R,
  refuse,
  type InvalidReason,
  type Refusal,
} from "./invalidReasons.js";
import {
  ASSET_TRANSFER_EIP3009,
  SCHEME_EXACT,
  v1NetworkChainId,
  X402_VERSION,
  X402_VERSION_V1,
  type EvmNetwork,
  type ExactAuthorization,
  type ExactPaymentRequest,
  type ExactRequirements,
  type WirePaymentPayload,
  type WirePaymentPayloadV1,
} from "./wire.js";

/**
 * Reads the body of POST /verify or POST /settle (already JSON-parsed, so any JSON value) into an
 * ExactPaymentRequest, or names the first thing wrong with the spec's reason. Total: whatever the
 * body, it returns and never throws. Only form is judged here; whether the payment is acceptable
 * (our network, our token, the amounts and times) is exactFieldChecks.ts's, the signature and the
 * chain's state the facilitator's.
 */

/** A uint256 in decimal has at most 78 digits; longer strings are refused before BigInt sees them. */
const MAX_UINT256_DIGITS = 78;
const MAX_UINT256 = 2n ** 256n - 1n;
/**
 * A smart wallet's ERC-1271 signature may be long (a passkey's WebAuthn assertion is several
 * hundred bytes); this bound only keeps a hostile one from reaching the RPC.
 */
const MAX_SIGNATURE_BYTES = 4096;
/** Bound on the EIP-712 domain name and version read from `extra`. */
const MAX_DOMAIN_FIELD_CHARS = 256;

export type ParsedRequest =
  { ok: true; request: ExactPaymentRequest } | { ok: false; refusal: Refusal; payer?: Address };

/** Parses a /verify or /settle body of x402 v2 (or v1), exact scheme, EIP-3009 on an EVM network. */
export function parseFacilitatorRequest(body: unknown): ParsedRequest {
  // The reference names the payer in every refusal; so do we whenever `from` reads as an address.
  const state: { payer?: Address } = {};
  const payer = peekPayer(body);
  if (payer !== undefined) state.payer = payer;
  try {
    return { ok: true, request: parse(body) };
  } catch (error) {
    const refusal =
      error instanceof RefusalSignal
        ? error.refusal
        : refuse(
            R.invalidPayload,
            `the request could not be read: ${error instanceof Error ? error.message : String(error)}`,
          );
    return state.payer === undefined
      ? { ok: false, refusal }
      : { ok: false, refusal, payer: state.payer };
  }
}

/** Carries a refusal out of the nested readers to parseFacilitatorRequest, which turns it into a value. */
class RefusalSignal extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.message);
  }
}

function fail(reason: InvalidReason, message: string): never {
  throw new RefusalSignal(refuse(reason, message));
}

type Json = Record<string, unknown>;

function parse(body: unknown): ExactPaymentRequest {
  const top = readObject(R.invalidPayload, "the request body", body);
  const payload = readObject(R.invalidPayload, "paymentPayload", top.paymentPayload);
  // Routed by the payload's version, as the reference's x402Facilitator routes; the envelope's must agree.
  const version = payload.x402Version;
  if (version !== X402_VERSION && version !== X402_VERSION_V1)
    fail(
      R.invalidX402Version,
      `paymentPayload.x402Version: only ${X402_VERSION_V1} and ${X402_VERSION} are supported, got ${describe(version)}`,
    );
  if (top.x402Version !== version)
    fail(
      R.invalidX402Version,
      `x402Version ${describe(top.x402Version)} differs from paymentPayload.x402Version ${version}`,
    );
  const requirementsJson = readObject(
    R.invalidPaymentRequirements,
    "paymentRequirements",
    top.paymentRequirements,
  );
  return version === X402_VERSION
    ? parseV2(payload, requirementsJson)
    : parseV1(payload, requirementsJson);
}

function parseV2(payload: Json, requirementsJson: Json): ExactPaymentRequest {
  const requirements = readRequirements(requirementsJson, "amount", readNetwork);
  const accepted = readObject(R.invalidPayload, "paymentPayload.accepted", payload.accepted);
  // As the reference: the client's echo must name the same scheme and network; the rest of the
  // payment is judged against paymentRequirements, which the resource server vouches for.
  if (accepted.scheme !== SCHEME_EXACT)
    fail(
      R.schemeMismatch,
      `paymentPayload.accepted.scheme: expected "${SCHEME_EXACT}", got ${describe(accepted.scheme)}`,
    );
  if (accepted.network !== requirements.network)
    fail(
      R.networkMismatch,
      `paymentPayload.accepted.network ${describe(accepted.network)} differs from paymentRequirements.network "${requirements.network}"`,
    );

  const extensions = payload.extensions ?? {};
  if (typeof extensions !== "object" || Array.isArray(extensions))
    fail(
      R.invalidPayload,
      `paymentPayload.extensions: expected an object, got ${describe(extensions)}`,
    );
  const { authorization, signature } = readExactPayload(payload.payload);
  return {
    x402Version: X402_VERSION,
    requirements,
    authorization,
    signature,
    extensions: extensions as Json,
    paymentPayload: payload as WirePaymentPayload,
  };
}

/**
 * x402 v1 as @x402/evm 2.27's ExactEvmSchemeV1 reads it: the payload names `scheme` and `network`
 * itself (no `accepted`), networks are v1 names (`base`), the amount is `maxAmountRequired`, and
 * extensions do not exist (the reference ignores any, so builder codes and payment identifiers of
 * a v1 payload are not read).
 */
function parseV1(payload: Json, requirementsJson: Json): ExactPaymentRequest {
  const requirements = readRequirements(requirementsJson, "maxAmountRequired", readNetworkV1);
  if (payload.scheme !== SCHEME_EXACT)
    fail(
      R.schemeMismatch,
      `paymentPayload.scheme: expected "${SCHEME_EXACT}", got ${describe(payload.scheme)}`,
    );
  if (typeof payload.network !== "string" || v1NetworkChainId(payload.network) === undefined)
    fail(
      R.networkMismatch,
      `paymentPayload.network: expected an x402 v1 network name, got ${describe(payload.network)}`,
    );
  if (payload.network !== requirements.network)
    fail(
      R.networkMismatch,
      `paymentPayload.network ${describe(payload.network)} differs from paymentRequirements.network "${requirements.network}"`,
    );
  const { authorization, signature } = readExactPayload(payload.payload);
  const { extensions: _ignored, ...withoutExtensions } = payload;
  return {
    x402Version: X402_VERSION_V1,
    requirements,
    authorization,
    signature,
    extensions: {},
    paymentPayload: withoutExtensions as WirePaymentPayloadV1,
  };
}

/** The exact scheme's EVM payload: an EIP-3009 authorization and its signature. */
function readExactPayload(value: unknown): { authorization: ExactAuthorization; signature: Hex } {
  const scheme = readObject(R.invalidPayload, "paymentPayload.payload", value);
  if ("permit2Authorization" in scheme)
    fail(
      R.unsupportedPayloadType,
      "paymentPayload.payload: a Permit2 payload; this facilitator settles EIP-3009 authorizations only",
    );
  const authJson = readObject(
    R.invalidPayload,
    "paymentPayload.payload.authorization",
    scheme.authorization,
  );
  const authorization: ExactAuthorization = {
    from: readAddress(R.invalidPayload, "paymentPayload.payload.authorization.from", authJson.from),
    to: readAddress(R.invalidPayload, "paymentPayload.payload.authorization.to", authJson.to),
    value: readUint256(
      R.invalidPayload,
      "paymentPayload.payload.authorization.value",
      authJson.value,
    ),
    validAfter: readUint256(
      R.invalidPayload,
      "paymentPayload.payload.authorization.validAfter",
      authJson.validAfter,
    ),
    validBefore: readUint256(
      R.invalidPayload,
      "paymentPayload.payload.authorization.validBefore",
      authJson.validBefore,
    ),
    nonce: readNonce("paymentPayload.payload.authorization.nonce", authJson.nonce),
  };
  return {
    authorization,
    signature: readSignature("paymentPayload.payload.signature", scheme.signature),
  };
}

/** `paymentPayload.payload.authorization.from` when it is a well-formed address, else undefined. */
function peekPayer(body: unknown): Address | undefined {
  const from = (
    body as { paymentPayload?: { payload?: { authorization?: { from?: unknown } } } } | null
  )?.paymentPayload?.payload?.authorization?.from;
  return typeof from === "string" &&
    /^0x[0-9a-fA-F]{40}$/.test(from) &&
    validate(from, { strict: true })
    ? checksum(from)
    : undefined;
}

function readRequirements(
  json: Json,
  amountKey: "amount" | "maxAmountRequired",
  networkOf: (value: unknown) => { network: string; chainId: number },
): ExactRequirements {
  const scheme = json.scheme;
  if (typeof scheme !== "string" || scheme === "")
    fail(
      R.invalidPaymentRequirements,
      `paymentRequirements.scheme: expected a scheme name, got ${describe(scheme)}`,
    );
  if (scheme !== SCHEME_EXACT)
    fail(
      R.unsupportedScheme,
      `paymentRequirements.scheme: only "${SCHEME_EXACT}" is supported, got ${describe(scheme)}`,
    );
  const { network, chainId } = networkOf(json.network);
  const extra = json.extra ?? {};
  if (typeof extra !== "object" || Array.isArray(extra))
    fail(
      R.invalidPaymentRequirements,
      `paymentRequirements.extra: expected an object, got ${describe(extra)}`,
    );
  const { assetTransferMethod, name, version } = extra as Json;
  // The reference's resource server leaves out assetTransferMethod when it is the default eip3009.
  if (assetTransferMethod !== undefined && assetTransferMethod !== ASSET_TRANSFER_EIP3009)
    fail(
      R.unsupportedPayloadType,
      `paymentRequirements.extra.assetTransferMethod: only "${ASSET_TRANSFER_EIP3009}" is supported, got ${describe(assetTransferMethod)}`,
    );
  const amount = readUint256(
    R.invalidPaymentRequirements,
    `paymentRequirements.${amountKey}`,
    json[amountKey],
  );
  if (amount === 0n)
    fail(
      R.invalidPaymentRequirements,
      `paymentRequirements.${amountKey}: a payment of 0 is not settled (it would only spend the relayer's gas)`,
    );
  const maxTimeoutSeconds = json.maxTimeoutSeconds;
  if (
    typeof maxTimeoutSeconds !== "number" ||
    !Number.isFinite(maxTimeoutSeconds) ||
    maxTimeoutSeconds <= 0
  )
    fail(
      R.invalidPaymentRequirements,
      `paymentRequirements.maxTimeoutSeconds: expected a positive number, got ${describe(maxTimeoutSeconds)}`,
    );
  return {
    scheme: SCHEME_EXACT,
    network,
    chainId,
    amount,
    asset: readAddress(R.invalidPaymentRequirements, "paymentRequirements.asset", json.asset),
    payTo: readAddress(R.invalidPaymentRequirements, "paymentRequirements.payTo", json.payTo),
    maxTimeoutSeconds,
    name: readDomainField("name", name),
    version: readDomainField("version", version),
  };
}

/** An x402 v1 network name the reference knows (`base`, `base-sepolia`, …) and its chain id. */
function readNetworkV1(value: unknown): { network: string; chainId: number } {
  const chainId = typeof value === "string" ? v1NetworkChainId(value) : undefined;
  if (chainId === undefined)
    fail(
      R.invalidNetwork,
      `paymentRequirements.network: expected an x402 v1 network name such as "base", got ${describe(value)}`,
    );
  return { network: value as string, chainId };
}

/** `eip155:<chain id>`, the chain id a positive safe integer written without leading zeros. */
function readNetwork(value: unknown): { network: EvmNetwork; chainId: number } {
  const match = typeof value === "string" ? /^eip155:([1-9][0-9]{0,15})$/.exec(value) : null;
  const chainId = match === null ? NaN : Number(match[1]);
  if (!Number.isSafeInteger(chainId))
    fail(
      R.invalidNetwork,
      `paymentRequirements.network: expected an EVM network "eip155:<chain id>", got ${describe(value)}`,
    );
  return { network: `eip155:${chainId}`, chainId };
}

function readObject(reason: InvalidReason, path: string, value: unknown): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    fail(reason, `${path}: expected an object, got ${describe(value)}`);
  return value as Json;
}

function readAddress(reason: InvalidReason, path: string, value: unknown): Address {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value))
    fail(reason, `${path}: expected an address (0x and 40 hex digits), got ${describe(value)}`);
  if (!validate(value, { strict: true })) fail(reason, `${path}: bad EIP-55 checksum in ${value}`);
  return checksum(value);
}

/** A decimal string of a uint256, as the exact scheme writes numbers: no sign, no leading zeros. */
function readUint256(reason: InvalidReason, path: string, value: unknown): bigint {
  if (
    typeof value !== "string" ||
    value.length > MAX_UINT256_DIGITS ||
    !/^(?:0|[1-9][0-9]*)$/.test(value)
  )
    fail(reason, `${path}: expected a decimal string of a uint256, got ${describe(value)}`);
  const number = BigInt(value);
  if (number > MAX_UINT256) fail(reason, `${path}: ${value} exceeds a uint256`);
  return number;
}

function readNonce(path: string, value: unknown): Hex {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(value))
    fail(
      R.invalidPayload,
      `${path}: expected 32 bytes of hex (0x and 64 hex digits), got ${describe(value)}`,
    );
  return value.toLowerCase() as Hex;
}

/** Bytes of hex; a signature that is there but not that is the reference's `failed_to_parse_signature`. */
function readSignature(path: string, value: unknown): Hex {
  if (value === undefined) fail(R.invalidPayload, `${path}: missing`);
  if (
    typeof value !== "string" ||
    value.length > 2 + MAX_SIGNATURE_BYTES * 2 ||
    !/^0x(?:[0-9a-fA-F]{2})+$/.test(value)
  )
    fail(
      R.failedToParseSignature,
      `${path}: expected 1 to ${MAX_SIGNATURE_BYTES} bytes of hex, got ${describe(value)}`,
    );
  return value.toLowerCase() as Hex;
}

function readDomainField(field: "name" | "version", value: unknown): string {
  if (typeof value !== "string" || value === "" || value.length > MAX_DOMAIN_FIELD_CHARS)
    fail(
      R.missingEip712Domain,
      `paymentRequirements.extra.${field}: expected the token's EIP-712 domain ${field} (1 to ${MAX_DOMAIN_FIELD_CHARS} characters), got ${describe(value)}`,
    );
  return value;
}
