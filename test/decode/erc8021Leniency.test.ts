import { type Hex } from "viem";
import { describe, expect, test } from "vitest";
import { decodeAttribution, ERC8021_MARKER } from "../../src/decode/erc8021.js";

const M = ERC8021_MARKER.slice(2);
const DD = "dddddddd";
const ascii = (text: string) => Buffer.from(text, "latin1").toString("hex");
/** CBOR text string of up to 23 bytes. */
const text = (value: string) => (0x60 + value.length).toString(16) + ascii(value);
/** `dd ‖ cbor ‖ cborLength (2) ‖ 0x02 ‖ marker`, as in ERC-8021's schema 2 (ethereum/ERCs PR 1209). */
const schema2 = (cbor: string): Hex =>
  `0x${DD}${cbor}${(cbor.length / 2).toString(16).padStart(4, "0")}02${M}`;
/** A CBOR map of text keys, in the order given. */
const map = (...entries: [string, string][]) =>
  (0xa0 + entries.length).toString(16) + entries.map(([k, v]) => text(k) + v).join("");

describe("decodeAttribution() schema 2 leniency where it is safe", () => {
  test("an s given as one text string is one service code (x402's builder-code extension allows it)", () => {
    // The schema-2 sample vector's app code, plus s: "morpho".
    expect(
      decodeAttribution(schema2(map(["a", text("baseapp")], ["s", text("morpho")]))),
    ).toMatchObject({
      kind: "codes",
      schemaId: 2,
      codes: [
        { code: "baseapp", role: "app" },
        { code: "morpho", role: "service" },
      ],
    });
    expect(decodeAttribution(schema2(map(["s", text("morpho")])))).toMatchObject({
      kind: "codes",
      codes: [{ code: "morpho", role: "service" }],
    });
  });

  test.each([
    ["an integer entry", `82${text("morpho")}01`, /"s"\[1\]: code is not a text string/],
    ["an empty entry", `82${text("morpho")}60`, /"s"\[1\]: empty code/],
    ["an entry with a comma", `81${text("a,b")}`, /"s"\[0\]: code contains a comma/],
    [
      "an entry with a control byte",
      `81${text("a\u0001")}`,
      /"s"\[0\]: code character outside printable ASCII/,
    ],
    ["a number instead of a list", "05", /"s" is neither a text string nor an array/],
    ["a text string with a comma", text("a,b"), /"s": code contains a comma/],
  ])(
    "s with %s: the app and wallet codes are kept, no service code is taken, and the bad entry is reported",
    (_, services, reason) => {
      const result = decodeAttribution(
        schema2(map(["a", text("baseapp")], ["w", text("wallet1")], ["s", services])),
      );
      expect(result).toMatchObject({
        kind: "codes",
        schemaId: 2,
        codes: [
          { code: "baseapp", role: "app" },
          { code: "wallet1", role: "wallet" },
        ],
      });
      expect(
        result.kind === "codes" && result.schemaId === 2 ? result.serviceError : undefined,
      ).toMatch(reason);
    },
  );

  test("a malformed s with no app or wallet code leaves nothing to credit: the suffix is malformed, with the reason", () => {
    expect(decodeAttribution(schema2(map(["s", `82${text("morpho")}01`])))).toEqual({
      kind: "malformed",
      schemaId: 2,
      reason: `"s"[1]: code is not a text string`,
    });
  });

  test("a malformed app or wallet code still makes the whole suffix malformed: only s is lenient", () => {
    expect(
      decodeAttribution(schema2(map(["a", "01"], ["s", `81${text("morpho")}`]))),
    ).toMatchObject({ kind: "malformed", reason: /"a": code is not a text string/ });
    expect(
      decodeAttribution(schema2(map(["w", "60"], ["s", `81${text("morpho")}`]))),
    ).toMatchObject({ kind: "malformed", reason: /"w": empty code/ });
  });
});
