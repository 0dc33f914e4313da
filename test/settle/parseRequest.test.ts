import { getAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, test } from "vitest";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { parseFacilitatorRequest } from "../../src/settle/parseRequest.js";
import {
  referencePaymentBody,
  referenceV1PaymentBody,
  type ExactOffer,
  type V1PaymentBody,
} from "../helpers/x402.js";

const payer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as `0x${string}`);
const OFFER: ExactOffer = {
  chainId: 8453,
  token: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  name: "Flash Test USD",
  version: "2",
  payTo: "0x000000000000000000000000000000000000c0de",
  amount: 10_000n,
};

type Body = Awaited<ReturnType<typeof referencePaymentBody>>;
let body: Body;
beforeAll(async () => {
  body = await referencePaymentBody(payer, OFFER);
});

/** A copy of the reference body with the value at `path` replaced (undefined deletes it). */
function mutate(path: string, value: unknown): unknown {
  const copy = structuredClone(body) as unknown as Record<string, unknown>;
  const keys = path.split(".");
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = keys.at(-1)!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

function reasonOf(input: unknown): string | undefined {
  const parsed = parseFacilitatorRequest(input);
  return parsed.ok ? undefined : parsed.refusal.invalidReason;
}

describe("parseFacilitatorRequest()", () => {
  test("reads the body the reference client and HTTPFacilitatorClient send", () => {
    const parsed = parseFacilitatorRequest(body);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const { requirements, authorization, signature } = parsed.request;
    expect(requirements).toMatchObject({
      scheme: "exact",
      network: "eip155:8453",
      chainId: 8453,
      amount: 10_000n,
      asset: OFFER.token,
      payTo: getAddress(OFFER.payTo),
      name: OFFER.name,
      version: "2",
    });
    const sent = body.paymentPayload.payload.authorization;
    expect(authorization).toEqual({
      from: payer.address,
      to: getAddress(OFFER.payTo),
      value: 10_000n,
      validAfter: BigInt(sent.validAfter!),
      validBefore: BigInt(sent.validBefore!),
      nonce: sent.nonce!.toLowerCase(),
    });
    expect(signature).toBe(body.paymentPayload.payload.signature.toLowerCase());
    expect(parsed.request.paymentPayload).toBe(
      (body as unknown as { paymentPayload: unknown }).paymentPayload,
    );
  });

  test("accepts assetTransferMethod eip3009 spelled out, and ignores keys it does not know", () => {
    expect(
      reasonOf(mutate("paymentRequirements.extra.assetTransferMethod", "eip3009")),
    ).toBeUndefined();
    expect(reasonOf(mutate("paymentRequiredExtensions", { "builder-code": {} }))).toBeUndefined();
  });

  test.each([
    ["the body is null", null, "invalid_payload"],
    ["the body is an array", [body], "invalid_payload"],
    ["the body is a string", "{}", "invalid_payload"],
  ])("refuses a request when %s", (_, input, reason) => {
    expect(reasonOf(input)).toBe(reason);
  });

  test.each<[string, unknown, string]>([
    ["x402Version", 1, "invalid_x402_version"],
    ["x402Version", "2", "invalid_x402_version"],
    ["x402Version", undefined, "invalid_x402_version"],
    ["paymentPayload.x402Version", 1, "invalid_x402_version"],
    ["paymentPayload.x402Version", 3, "invalid_x402_version"],
    ["paymentPayload", undefined, "invalid_payload"],
    ["paymentPayload", [], "invalid_payload"],
    ["paymentRequirements", undefined, "invalid_payment_requirements"],
    ["paymentRequirements", "exact", "invalid_payment_requirements"],
    ["paymentRequirements.scheme", "upto", "unsupported_scheme"],
    ["paymentRequirements.scheme", "", "invalid_payment_requirements"],
    ["paymentRequirements.scheme", 7, "invalid_payment_requirements"],
    ["paymentRequirements.network", "eip155:0", "invalid_network"],
    ["paymentRequirements.network", "eip155:08453", "invalid_network"],
    ["paymentRequirements.network", "eip155:99999999999999999", "invalid_network"],
    ["paymentRequirements.network", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "invalid_network"],
    ["paymentRequirements.network", 8453, "invalid_network"],
    ["paymentRequirements.extra.assetTransferMethod", "permit2", "unsupported_payload_type"],
    ["paymentRequirements.extra.name", undefined, "invalid_exact_evm_missing_eip712_domain"],
    ["paymentRequirements.extra.version", "", "invalid_exact_evm_missing_eip712_domain"],
    ["paymentRequirements.extra", null, "invalid_exact_evm_missing_eip712_domain"],
    ["paymentRequirements.extra", [], "invalid_payment_requirements"],
    ["paymentRequirements.amount", "0", "invalid_payment_requirements"],
    ["paymentRequirements.amount", "-1", "invalid_payment_requirements"],
    ["paymentRequirements.amount", "1e6", "invalid_payment_requirements"],
    ["paymentRequirements.amount", "0x10", "invalid_payment_requirements"],
    ["paymentRequirements.amount", " 10000", "invalid_payment_requirements"],
    ["paymentRequirements.amount", "010000", "invalid_payment_requirements"],
    ["paymentRequirements.amount", 10000, "invalid_payment_requirements"],
    ["paymentRequirements.amount", (2n ** 256n).toString(), "invalid_payment_requirements"],
    ["paymentRequirements.amount", "9".repeat(5000), "invalid_payment_requirements"],
    ["paymentRequirements.maxTimeoutSeconds", 0, "invalid_payment_requirements"],
    ["paymentRequirements.maxTimeoutSeconds", "60", "invalid_payment_requirements"],
    [
      "paymentRequirements.asset",
      "0x5fbDB2315678afecb367f032d93F642f64180aa3",
      "invalid_payment_requirements",
    ],
    [
      "paymentRequirements.asset",
      "0x5FbDB2315678afecb367f032d93F642f64180a",
      "invalid_payment_requirements",
    ],
    ["paymentRequirements.payTo", "merchant", "invalid_payment_requirements"],
    ["paymentPayload.accepted", undefined, "invalid_payload"],
    ["paymentPayload.accepted.scheme", "upto", "invalid_exact_evm_scheme"],
    ["paymentPayload.accepted.network", "eip155:84532", "invalid_exact_evm_network_mismatch"],
    ["paymentPayload.extensions", [], "invalid_payload"],
    ["paymentPayload.extensions", "x", "invalid_payload"],
    ["paymentPayload.payload", undefined, "invalid_payload"],
    ["paymentPayload.payload.permit2Authorization", {}, "unsupported_payload_type"],
    ["paymentPayload.payload.authorization", undefined, "invalid_payload"],
    ["paymentPayload.payload.authorization.from", "0x1234", "invalid_payload"],
    ["paymentPayload.payload.authorization.to", null, "invalid_payload"],
    ["paymentPayload.payload.authorization.value", 10000, "invalid_payload"],
    ["paymentPayload.payload.authorization.validAfter", "-5", "invalid_payload"],
    ["paymentPayload.payload.authorization.validBefore", "1.5", "invalid_payload"],
    ["paymentPayload.payload.authorization.nonce", "0x1234", "invalid_payload"],
    ["paymentPayload.payload.authorization.nonce", `0x${"zz".repeat(32)}`, "invalid_payload"],
    ["paymentPayload.payload.signature", "0x", "invalid_exact_evm_failed_to_parse_signature"],
    ["paymentPayload.payload.signature", "0xabc", "invalid_exact_evm_failed_to_parse_signature"],
    ["paymentPayload.payload.signature", 65, "invalid_exact_evm_failed_to_parse_signature"],
    [
      "paymentPayload.payload.signature",
      `0x${"ab".repeat(4097)}`,
      "invalid_exact_evm_failed_to_parse_signature",
    ],
    ["paymentPayload.payload.signature", undefined, "invalid_payload"],
  ])("refuses %s = %j with %s", (path, value, reason) => {
    expect(reasonOf(mutate(path, value))).toBe(reason);
  });

  test("names the payer in a refusal whenever `from` reads as an address, and says what was wrong", () => {
    const late = parseFacilitatorRequest(
      mutate("paymentPayload.payload.authorization.value", "ten"),
    );
    expect(late).toMatchObject({
      ok: false,
      payer: payer.address,
      refusal: { invalidReason: "invalid_payload" },
    });
    if (!late.ok)
      expect(late.refusal.message).toMatch(
        /paymentPayload\.payload\.authorization\.value: expected a decimal string.*"ten"/,
      );
    const early = parseFacilitatorRequest(mutate("paymentRequirements.network", "eip155:x"));
    expect(early).toMatchObject({ ok: false, payer: payer.address });
    const noPayer = parseFacilitatorRequest(
      mutate("paymentPayload.payload.authorization.from", "alice"),
    );
    expect(noPayer.ok).toBe(false);
    expect("payer" in noPayer).toBe(false);
  });

  test("never throws, whatever part of the body is replaced by whatever JSON", () => {
    const junk: unknown[] = [
      null,
      0,
      -1,
      1.5,
      "",
      "x",
      "0x",
      true,
      [],
      [1, "a"],
      {},
      { a: 1 },
      "9".repeat(200),
      { __proto__: { x: 1 } },
    ];
    const paths = collectPaths(body as unknown as Record<string, unknown>, "");
    let random = 42;
    const next = (n: number) => ((random = (random * 1103515245 + 12345) % 2 ** 31), random % n);
    let refused = 0;
    for (let round = 0; round < 2000; round++) {
      const input = mutate(paths[next(paths.length)]!, junk[next(junk.length)]);
      const parsed = parseFacilitatorRequest(input);
      if (!parsed.ok) {
        refused++;
        expect(parsed.refusal.invalidReason).toMatch(/^[a-z0-9_]+$/);
        expect(parsed.refusal.message.length).toBeGreaterThan(0);
      }
    }
    expect(refused).toBeGreaterThan(1000);
  });
});

describe("parseFacilitatorRequest() of an x402 v1 body", () => {
  let v1: V1PaymentBody;
  beforeAll(async () => {
    v1 = await referenceV1PaymentBody(payer, OFFER, "base");
  });
  const edited = (edit: (copy: V1PaymentBody) => void): unknown => {
    const copy = structuredClone(v1);
    edit(copy);
    return copy;
  };

  test("reads the reference v1 client's body: maxAmountRequired, the network `base` on chain 8453, no extensions", () => {
    const parsed = parseFacilitatorRequest(
      edited(
        (b) =>
          void ((b.paymentPayload as Record<string, unknown>).extensions = {
            "payment-identifier": { info: { id: "pay_0123456789abcdef" } },
          }),
      ),
    );
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.request.x402Version).toBe(1);
    expect(parsed.request.requirements).toMatchObject({
      scheme: "exact",
      network: "base",
      chainId: 8453,
      amount: 10_000n,
      asset: OFFER.token,
      name: OFFER.name,
      version: "2",
    });
    expect(parsed.request.authorization).toMatchObject({ from: payer.address, value: 10_000n });
    // v1 has no extensions; the reference's ExactEvmSchemeV1 reads none, so neither do we.
    expect(parsed.request.extensions).toEqual({});
    expect("extensions" in parsed.request.paymentPayload).toBe(false);
  });

  test.each<[string, (b: V1PaymentBody) => void, string]>([
    [
      "a v2 envelope around a v1 payload",
      (b) => void ((b as { x402Version: number }).x402Version = 2),
      "invalid_x402_version",
    ],
    [
      "requirements under another scheme",
      (b) => void (b.paymentRequirements.scheme = "upto"),
      "unsupported_scheme",
    ],
    [
      "a payload under another scheme",
      (b) => void (b.paymentPayload.scheme = "upto"),
      "invalid_exact_evm_scheme",
    ],
    [
      "requirements on a network v1 does not know",
      (b) => void (b.paymentRequirements.network = "eip155:8453"),
      "invalid_network",
    ],
    [
      "a payload on a network v1 does not know",
      (b) => void (b.paymentPayload.network = "base-mainnet"),
      "invalid_exact_evm_network_mismatch",
    ],
    [
      "a payload on another v1 network",
      (b) => void (b.paymentPayload.network = "base-sepolia"),
      "invalid_exact_evm_network_mismatch",
    ],
    [
      "no maxAmountRequired",
      (b) => void delete (b.paymentRequirements as Record<string, unknown>).maxAmountRequired,
      "invalid_payment_requirements",
    ],
    [
      "no EIP-712 domain",
      (b) => void delete b.paymentRequirements.extra.name,
      "invalid_exact_evm_missing_eip712_domain",
    ],
  ])("refuses %s with %s", (_what, edit, reason) => {
    expect(reasonOf(edited(edit))).toBe(reason);
  });
});

/** Every dotted path to a value in `node`. */
function collectPaths(node: Record<string, unknown>, prefix: string): string[] {
  return Object.entries(node).flatMap(([key, value]) => {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? [path, ...collectPaths(value as Record<string, unknown>, path)]
      : [path];
  });
}
