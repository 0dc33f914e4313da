import { Cbor } from "ox";
import { describe, expect, test } from "vitest";
import { readCbor } from "../../src/decode/cbor.js";

const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex, "hex"));

describe("readCbor()", () => {
  test("reads what ox encodes, keeping each item's byte range", () => {
    const encoded = Cbor.encode({
      a: "baseapp",
      s: ["x", "y"],
      m: { n: -5, f: 1.5, ok: true, none: null },
    });
    const result = readCbor(bytes(encoded.slice(2)), 64);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.item).toMatchObject({
      type: "map",
      start: 0,
      end: (encoded.length - 2) / 2,
    });
    expect(result.value.deepStarts).toEqual([]);
  });

  test("items past maxDepth become 'deep' placeholders whose start offsets are reported", () => {
    // [[[1]], 2] with maxDepth 2: the inner [1] starts at byte 2 and is cut off.
    const result = readCbor(bytes("82818101" + "02"), 2);
    expect(result).toMatchObject({
      ok: true,
      value: {
        item: {
          type: "array",
          items: [{ type: "array", items: [{ type: "deep", start: 2, end: 4 }] }, { type: "uint" }],
        },
        deepStarts: [2],
      },
    });
  });

  test("60,000 levels of indefinite arrays are read without exhausting the stack", () => {
    const result = readCbor(bytes("9f".repeat(60_000) + "ff".repeat(60_000)), 64);
    // Depth 1 starts at byte 0, so the first cut-off item (depth 65) starts at byte 64.
    expect(result.ok && result.value.deepStarts).toEqual([64]);
  });

  test("a break outside an indefinite container and an unclosed one are rejected", () => {
    expect(readCbor(bytes("ff"), 64)).toEqual({ ok: false, reason: "unexpected CBOR break" });
    expect(readCbor(bytes("9f01"), 64)).toEqual({
      ok: false,
      reason: "CBOR length beyond the buffer",
    });
    expect(readCbor(bytes(`${"9f".repeat(100)}01`), 64)).toEqual({
      ok: false,
      reason: "CBOR length beyond the buffer",
    });
  });
});
