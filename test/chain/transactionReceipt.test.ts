import type { Hex } from "viem";
import { describe, expect, test } from "vitest";
import { parseReceipt } from "../../src/chain/transactionReceipt.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import {
  judgeCaptureReceipt,
  type ExpectedCapture,
} from "../../src/authorization/captureReceipt.js";

const word = (hex: string) => `0x${hex.replace(/^0x/, "").padStart(64, "0")}` as Hex;
const TX = word("a1");
const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const PAYER = "0x00000000000000000000000000000000000a11ce";
const SHOP = "0x0000000000000000000000000000000000005409";
const NONCE = word("99");

function log(overrides: Record<string, unknown> = {}) {
  return {
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word(PAYER), word(SHOP)],
    data: word("f4240"),
    blockNumber: "0xa",
    blockHash: word("b"),
    transactionHash: TX,
    transactionIndex: "0x0",
    logIndex: "0x1",
    removed: false,
    ...overrides,
  };
}
function receipt(overrides: Record<string, unknown> = {}) {
  return {
    transactionHash: TX,
    blockHash: word("b"),
    blockNumber: "0xa",
    status: "0x1",
    gasUsed: "0x5208",
    logs: [
      log({ topics: [AUTHORIZATION_USED_TOPIC, word(PAYER), NONCE], data: "0x", logIndex: "0x0" }),
      log(),
    ],
    ...overrides,
  };
}
const expected: ExpectedCapture = {
  token: TOKEN,
  authorizer: PAYER,
  payee: SHOP,
  value: 1_000_000n,
  nonce: NONCE,
};

describe("parseReceipt()", () => {
  test("reads status, block and the logs, each checked; a pre-confirmed receipt has a zero block hash", () => {
    const parsed = parseReceipt(receipt(), TX)!;
    expect(parsed).toMatchObject({
      status: "success",
      blockNumber: 10n,
      preconfirmed: false,
      gasUsed: 21_000n,
    });
    expect(parsed.logs.map((l) => l.logIndex)).toEqual([0, 1]);
    expect(parseReceipt(receipt({ blockHash: word("0") }), TX)?.preconfirmed).toBe(true);
    expect(parseReceipt(null, TX)).toBeNull();
  });

  test("reads the effective gas price when the node gives one, null when it omits it", () => {
    expect(parseReceipt(receipt({ effectiveGasPrice: "0x3b9aca00" }), TX)?.effectiveGasPrice).toBe(
      1_000_000_000n,
    );
    expect(parseReceipt(receipt(), TX)?.effectiveGasPrice).toBeNull();
  });

  test.each([
    ["another transaction's receipt", { transactionHash: word("a2") }, /receipt of/],
    ["no logs array", { logs: null }, /logs is not an array/],
    [
      "a log with a malformed topic",
      { logs: [log({ topics: ["0x12"] })] },
      /topics\[0\] is malformed/,
    ],
    [
      "a log of another transaction",
      { logs: [log({ transactionHash: word("a3") })] },
      /belongs to transaction/,
    ],
    ["a log in another block", { logs: [log({ blockNumber: "0xb" })] }, /is in block 0xb, not 0xa/],
    ["logs on a reverted receipt", { status: "0x0" }, /reverted receipt with 2 log/],
    ["an unknown status", { status: "0x2" }, /status "0x2"/],
    ["a malformed effective gas price", { effectiveGasPrice: 12 }, /effectiveGasPrice 12/],
  ])("refuses %s", (_name, overrides, message) => {
    expect(() => parseReceipt(receipt(overrides), TX)).toThrow(message);
  });
});

describe("judgeCaptureReceipt()", () => {
  test("paid only with status success, this authorization's AuthorizationUsed and this payment's Transfer, both from the token", () => {
    expect(judgeCaptureReceipt(parseReceipt(receipt(), TX)!, expected)).toEqual({ kind: "paid" });
    expect(
      judgeCaptureReceipt(parseReceipt(receipt({ status: "0x0", logs: [] }), TX)!, expected),
    ).toEqual({ kind: "reverted" });
    const without = (logs: unknown[]) =>
      judgeCaptureReceipt(parseReceipt(receipt({ logs }), TX)!, expected).kind;
    const used = log({
      topics: [AUTHORIZATION_USED_TOPIC, word(PAYER), NONCE],
      data: "0x",
      logIndex: "0x0",
    });
    expect(without([log()])).toBe("mismatch");
    expect(without([used])).toBe("mismatch");
    expect(without([used, log({ data: word("f4241") })])).toBe("mismatch");
    expect(without([used, log({ topics: [TRANSFER_TOPIC, word(PAYER), word("beef")] })])).toBe(
      "mismatch",
    );
    expect(without([used, log({ address: "0x0000000000000000000000000000000000000bad" })])).toBe(
      "mismatch",
    );
    expect(
      without([
        log({
          topics: [AUTHORIZATION_USED_TOPIC, word(PAYER), word("98")],
          data: "0x",
          logIndex: "0x0",
        }),
        log(),
      ]),
    ).toBe("mismatch");
    expect(
      without([
        used,
        log({
          topics: [TRANSFER_TOPIC, word(PAYER), word(SHOP)],
          address: TOKEN.toUpperCase().replace("0X", "0x"),
        }),
      ]),
    ).toBe("paid");
  });
});
