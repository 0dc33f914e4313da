import {
  appendPaymentIdentifierToExtensions,
  declarePaymentIdentifierExtension,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import {
  createPaymentIdentifierCache,
  judgePaymentIdentifier,
  paymentIdentifierConflict,
  PAYMENT_IDENTIFIER_CONFLICT_STATUS,
  readPaymentIdentifier,
} from "../../src/settle/paymentIdentifier.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

const payer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as `0x${string}`);
const OFFER: ExactOffer = {
  chainId: 8453,
  token: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  name: "Flash Test USD",
  version: "2",
  payTo: "0x000000000000000000000000000000000000c0de",
  amount: 10_000n,
};
const ID = "pay_7d5d747be160e280504c099d984bcfe0";

/** A reference client's payload carrying `id` in the extension, as a resource server declaring it receives it. */
async function payloadWithId(id: string, offer: ExactOffer = OFFER) {
  const extensions = appendPaymentIdentifierToExtensions(
    { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) },
    id,
  );
  return (await referencePaymentBody(payer, offer, extensions)).paymentPayload;
}

describe("readPaymentIdentifier()", () => {
  test("reads the id the reference client appends, and fingerprints the payload whatever its key order", async () => {
    const payload = await payloadWithId(ID);
    const read = readPaymentIdentifier(payload);
    expect(read).toMatchObject({
      kind: "present",
      id: ID,
      fingerprint: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    const reordered = Object.fromEntries(Object.entries(structuredClone(payload)).reverse());
    expect(readPaymentIdentifier(reordered)).toEqual(read);
  });

  test("gives another fingerprint to another payload with the same id", async () => {
    const first = readPaymentIdentifier(await payloadWithId(ID));
    const second = readPaymentIdentifier(await payloadWithId(ID, { ...OFFER, amount: 20_000n }));
    expect(
      first.kind === "present" &&
        second.kind === "present" &&
        first.fingerprint !== second.fingerprint,
    ).toBe(true);
  });

  test("is absent without the extension or without an id in it", async () => {
    expect(readPaymentIdentifier({})).toEqual({ kind: "absent" });
    expect(readPaymentIdentifier({ extensions: null })).toEqual({ kind: "absent" });
    expect(
      readPaymentIdentifier({
        extensions: { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(true) },
      }),
    ).toEqual({ kind: "absent" });
  });

  test.each<[string, unknown]>([
    ["an id of 15 characters", { info: { required: false, id: "pay_12345678901" } }],
    ["an id of 129 characters", { info: { required: false, id: "p".repeat(129) } }],
    ["an id with a space", { info: { required: false, id: "pay_1234567890 12345" } }],
    ["a numeric id", { info: { required: false, id: 1234567890123456 } }],
    ["info as a string", { info: "pay_7d5d747be160e280" }],
    ["the extension as an array", [ID]],
  ])("refuses %s as invalid_payload", (_, extension) => {
    const read = readPaymentIdentifier({ extensions: { [PAYMENT_IDENTIFIER]: extension } });
    expect(read).toMatchObject({ kind: "invalid", refusal: { invalidReason: "invalid_payload" } });
  });

  test("refuses a payload nested too deep to fingerprint, without overflowing the stack", () => {
    let deep: unknown = "x";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const read = readPaymentIdentifier({
      extensions: { [PAYMENT_IDENTIFIER]: { info: { required: false, id: ID } }, other: deep },
    });
    expect(read).toMatchObject({
      kind: "invalid",
      refusal: { message: expect.stringMatching(/nested deeper/) },
    });
  });
});

describe("payment identifier idempotency", () => {
  test("judgePaymentIdentifier() says new, same or conflict from what was stored", () => {
    expect(judgePaymentIdentifier(undefined, "0x01")).toBe("new");
    expect(judgePaymentIdentifier({ fingerprint: "0x01" }, "0x01")).toBe("same");
    expect(judgePaymentIdentifier({ fingerprint: "0x01" }, "0x02")).toBe("conflict");
    expect(paymentIdentifierConflict(ID)).toEqual({
      invalidReason: "payment_identifier_conflict",
      message: expect.stringContaining(ID),
    });
    expect(PAYMENT_IDENTIFIER_CONFLICT_STATUS).toBe(409);
  });

  test("the cache answers a repeat with the first answer, even one still in flight, and refuses another payload", async () => {
    const cache = createPaymentIdentifierCache<string>({ maxEntries: 10, ttlMs: 60_000 });
    const first = cache.claim(ID, "0xaa");
    expect(first.kind).toBe("first");
    const inFlight = cache.claim(ID, "0xaa");
    expect(inFlight.kind).toBe("repeat");
    expect(cache.claim(ID, "0xbb")).toEqual({ kind: "conflict" });
    if (first.kind === "first") first.answer("0xtx");
    if (inFlight.kind === "repeat") await expect(inFlight.answer).resolves.toBe("0xtx");
    const later = cache.claim(ID, "0xaa");
    expect(later.kind === "repeat" && (await later.answer)).toBe("0xtx");
  });

  test("an abandoned first claim frees the id and tells the waiting repeat to retry", async () => {
    const cache = createPaymentIdentifierCache<string>({ maxEntries: 10, ttlMs: 60_000 });
    const first = cache.claim(ID, "0xaa");
    const waiting = cache.claim(ID, "0xaa");
    if (first.kind === "first") first.abandon();
    expect(waiting.kind === "repeat" && (await waiting.answer)).toBeUndefined();
    expect(cache.claim(ID, "0xbb").kind).toBe("first");
  });

  test("the cache forgets ids after ttlMs and beyond maxEntries, oldest first", () => {
    let now = 0;
    const cache = createPaymentIdentifierCache<string>({
      maxEntries: 2,
      ttlMs: 1_000,
      nowMs: () => now,
    });
    cache.claim("pay_a_0123456789abcdef", "0x01");
    now = 500;
    cache.claim("pay_b_0123456789abcdef", "0x02");
    cache.claim("pay_c_0123456789abcdef", "0x03");
    expect(cache.size()).toBe(2);
    expect(cache.claim("pay_a_0123456789abcdef", "0x09").kind).toBe("first");
    now = 1_600;
    expect(cache.claim("pay_b_0123456789abcdef", "0x09").kind).toBe("first");
    expect(cache.claim("pay_c_0123456789abcdef", "0x09").kind).toBe("first");
  });
});
