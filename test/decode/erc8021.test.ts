import { Cbor } from "ox";
import { Attribution as OxAttribution } from "ox/erc8021";
import { encodeFunctionData, getAddress, parseAbi, type Hex } from "viem";
import { describe, expect, test } from "vitest";
import {
  decodeAttribution,
  ERC8021_MARKER,
  registryOfCode,
  type Attribution,
  type AttributionCode,
} from "../../src/decode/erc8021.js";

const M = ERC8021_MARKER.slice(2);
const DD = "dddddddd";
const hex = (...parts: string[]): Hex => `0x${parts.join("")}`;
const byteHex = (value: number, size = 1) => value.toString(16).padStart(size * 2, "0");
const ascii = (text: string) => Buffer.from(text, "latin1").toString("hex");
const codes = (...list: string[]): AttributionCode[] =>
  list.map((code) => ({ code, role: "code" }));
/** `prefix ‖ cbor ‖ cborLength (2) ‖ 0x02 ‖ marker`. */
const schema2 = (cbor: string, prefix = DD): Hex =>
  hex(prefix, cbor, byteHex(cbor.length / 2, 2), "02", M);
/** `prefix ‖ codes ‖ codesLength (1) ‖ 0x00 ‖ marker` with the real length. */
const schema0 = (codesHex: string, prefix = DD): Hex =>
  hex(prefix, codesHex, byteHex(codesHex.length / 2), "00", M);
const sizeOf = (data: Hex) => (data.length - 2) / 2;

/** ox's answer, or the error it throws. */
function oxFromData(data: Hex): ReturnType<typeof OxAttribution.fromData> | "threw" {
  try {
    return OxAttribution.fromData(data);
  } catch {
    return "threw";
  }
}

function expectMalformed(result: Attribution, schemaId: number | undefined, reason?: RegExp) {
  expect(result.kind).toBe("malformed");
  if (result.kind !== "malformed") return;
  expect(result.schemaId).toBe(schemaId);
  if (reason !== undefined) expect(result.reason).toMatch(reason);
}

describe("decodeAttribution() on the ERC-8021 sample vectors", () => {
  test("empty calldata has no attribution", () => {
    expect(decodeAttribution("0x")).toEqual({ kind: "none" });
    expect(oxFromData("0x")).toBeUndefined();
  });

  test("the marker alone has no attribution", () => {
    expect(decodeAttribution(hex(M))).toEqual({ kind: "none" });
    expect(oxFromData(hex(M))).toBeUndefined();
  });

  test("schema 0 with one code yields baseapp", () => {
    const data = hex(DD, "62617365617070", "07", "00", M);
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 0,
      codes: codes("baseapp"),
      suffixLength: 25,
    });
    expect(oxFromData(data)).toEqual({ codes: ["baseapp"], id: 0 });
  });

  test("schema 0 with two codes yields baseapp and morpho in order", () => {
    const data = hex(DD, "626173656170702c6d6f7270686f", "0e", "00", M);
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 0,
      codes: codes("baseapp", "morpho"),
      suffixLength: 32,
    });
    expect(oxFromData(data)).toEqual({ codes: ["baseapp", "morpho"], id: 0 });
  });

  test("a codes length larger than the calldata is malformed", () => {
    const data = hex(DD, "62617365617070", "20", "00", M);
    expectMalformed(decodeAttribution(data), 0, /overruns/);
    expect(oxFromData(data)).toBeUndefined();
  });

  test("an unknown schema id gives no attribution", () => {
    const data = hex(DD, "ff", M);
    expect(decodeAttribution(data)).toEqual({ kind: "unknown_schema", schemaId: 0xff });
    expect(oxFromData(data)).toBeUndefined();
  });

  test("the length-byte-first sample from Base's FAQ is malformed", () => {
    // Read backwards, the length byte is the last "p" (0x70 = 112), far more than the 8 bytes before it.
    const data = hex("0762617365617070", "00", M);
    expectMalformed(decodeAttribution(data), 0, /overruns/);
    expect(oxFromData(data)).toBeUndefined();
  });

  test("schema 2 with an app code yields baseapp", () => {
    const data = hex(DD, "a161616762617365617070", "000b", "02", M);
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 2,
      codes: [{ code: "baseapp", role: "app" }],
      suffixLength: 30,
    });
    expect(oxFromData(data)).toEqual({ appCode: "baseapp", id: 2 });
  });

  test("schema 2 with bad CBOR is malformed, without throwing", () => {
    const data = hex(DD, "ff", "0001", "02", M);
    expectMalformed(decodeAttribution(data), 2);
    // Note: ox throws Cbor.InvalidAdditionalInfoError here; ours never throws.
    expect(oxFromData(data)).toBe("threw");
  });
});

describe("decodeAttribution() on schemas 0 and 1", () => {
  test("a generated builder code is read with its prefix", () => {
    const data = hex(DD, "62635f62386e6f73356138", "0b", "00", M);
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 0,
      codes: codes("bc_b8nos5a8"),
      suffixLength: 29,
    });
  });

  test("schema 1 yields the codes and the registry address and chain id", () => {
    // ox's documented sample, upper-case hex digits included.
    const data: Hex =
      "0xddddddddcccccccccccccccccccccccccccccccccccccccc210502626173656170702C6D6F7270686F0E0180218021802180218021802180218021";
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 1,
      codes: codes("baseapp", "morpho"),
      registry: { address: "0xcccccccccccccccccccccccccccccccccccccccc", chainId: 8453n },
      suffixLength: sizeOf(data) - 4,
    });
    expect(oxFromData(data)).toEqual({
      codes: ["baseapp", "morpho"],
      codeRegistry: { address: "0xcccccccccccccccccccccccccccccccccccccccc", chainId: 8453 },
      id: 1,
    });
  });

  test("schema 1 lower-cases a checksummed registry address and reads a chain id wider than 53 bits", () => {
    const address = getAddress("0xd8da6bf26964af9d7eed9e03e53415d37aa96045");
    const data = hex(address.slice(2), "0100000000000000ff", "09", ascii("x"), "01", "01", M);
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 1,
      codes: codes("x"),
      registry: { address: address.toLowerCase(), chainId: 0x0100000000000000ffn },
      suffixLength: sizeOf(data),
    });
  });

  test("schema 1 with a zero chain id length is malformed", () => {
    const data = hex("cc".repeat(20), "00", ascii("baseapp"), "07", "01", M);
    expectMalformed(decodeAttribution(data), 1, /zero/);
    expect(oxFromData(data)).toBeUndefined();
  });

  test("schema 1 whose registry runs past the start of the calldata is malformed", () => {
    const data = hex("cc".repeat(19), "2105", "02", ascii("baseapp"), "07", "01", M);
    expectMalformed(decodeAttribution(data), 1, /overruns/);
    expect(oxFromData(data)).toBeUndefined();
  });

  test("schema 1 with a chain id longer than 32 bytes is malformed", () => {
    const data = hex("cc".repeat(20), "01".repeat(33), "21", ascii("baseapp"), "07", "01", M);
    expectMalformed(decodeAttribution(data), 1, /32 bytes/);
  });

  test("schema 1 with nothing before the codes is malformed", () => {
    expectMalformed(decodeAttribution(hex(ascii("baseapp"), "07", "01", M)), 1, /registry missing/);
  });

  test("schema 0 without a length byte is malformed", () => {
    expectMalformed(decodeAttribution(hex("00", M)), 0, /missing/);
  });

  test("a too-large length that still fits reads into ABI words and is caught by the character check", () => {
    const call = encodeFunctionData({
      abi: parseAbi(["function transfer(address to, uint256 value)"]),
      args: ["0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045", 1_000_000n],
    });
    const data = hex(call.slice(2), ascii("baseapp"), byteHex(7 + 40), "00", M);
    expectMalformed(decodeAttribution(data), 0, /printable ASCII/);
    // Note: ox returns the ABI bytes as a "code" here; ours is malformed and invents nothing.
    const ox = oxFromData(data);
    expect(ox !== "threw" && ox?.codes?.[0]).toMatch(/\u0000/);
  });

  test.each([
    ["a control byte", "bas\u0001app"],
    ["a tab", "base\tapp"],
    ["DEL (0x7f)", "base\u007fapp"],
    ["a byte above 0x7e", "base\u0080app"],
    ["a Latin-1 byte", "caf\u00e9"],
  ])("a code holding %s is malformed", (_, text) => {
    const data = schema0(ascii(text));
    expectMalformed(decodeAttribution(data), 0, /printable ASCII/);
  });

  test("UTF-8 bytes in a code are malformed", () => {
    expectMalformed(
      decodeAttribution(schema0(Buffer.from("café").toString("hex"))),
      0,
      /printable ASCII/,
    );
  });

  test.each([
    ["between two commas", "a,,b"],
    ["before a leading comma", ",a"],
    ["after a trailing comma", "a,"],
    ["that is a lone comma", ","],
  ])("an empty code %s is malformed", (_, text) => {
    expectMalformed(decodeAttribution(schema0(ascii(text))), 0, /empty code/);
  });

  test("a zero codes length is malformed", () => {
    const data = hex(DD, "00", "00", M);
    expectMalformed(decodeAttribution(data), 0, /empty code/);
    // Note: ox answers { codes: [] } here; an empty codes field attributes nothing, so ours calls it malformed.
    expect(oxFromData(data)).toEqual({ codes: [], id: 0 });
  });

  test("spaces and every other printable character are accepted in codes", () => {
    const text = "a b~!_{}";
    expect(decodeAttribution(schema0(ascii(text)))).toMatchObject({
      kind: "codes",
      codes: codes(text),
    });
  });

  test("non-hex characters in the suffix are malformed, not thrown", () => {
    expectMalformed(decodeAttribution(hex("zz", "01", "00", M)), 0, /not hex/);
    expectMalformed(decodeAttribution(hex(DD, "zz", M)), undefined, /not hex/);
    expectMalformed(decodeAttribution(`0x0${M}` as Hex), undefined, /whole bytes/);
    expectMalformed(decodeAttribution(`00${M}` as Hex), undefined, /0x-prefixed/);
  });

  test("inputs that are not strings give no attribution", () => {
    for (const input of [undefined, null, 42, new Uint8Array(4), {}]) {
      expect(decodeAttribution(input as unknown as Hex)).toEqual({ kind: "none" });
    }
  });

  test("a future schema with a 2-byte length gives no attribution", () => {
    expect(decodeAttribution(hex(DD, "aabb", "0002", "03", M))).toEqual({
      kind: "unknown_schema",
      schemaId: 3,
    });
  });
});

describe("decodeAttribution() on schema 2", () => {
  const registryAddress = getAddress("0xd8da6bf26964af9d7eed9e03e53415d37aa96045");

  test("reads a, w, s, r and m as ox writes them", () => {
    const metadata = { source: "webapp", n: -5, f: 1.5, ok: true, none: null, list: [1, "two"] };
    const suffix = OxAttribution.toDataSuffix({
      appCode: "baseapp",
      walletCode: "privy",
      serviceCodes: ["relay", "solver 1"],
      registries: {
        app: { address: registryAddress, chainId: 8453 },
        wallet: { address: registryAddress, chainId: 1 },
      },
      metadata,
    });
    const data = hex(DD, suffix.slice(2));
    expect(decodeAttribution(data)).toEqual({
      kind: "codes",
      schemaId: 2,
      codes: [
        { code: "baseapp", role: "app" },
        { code: "privy", role: "wallet" },
        { code: "relay", role: "service" },
        { code: "solver 1", role: "service" },
      ],
      registries: {
        app: { address: registryAddress.toLowerCase(), chainId: 8453n },
        wallet: { address: registryAddress.toLowerCase(), chainId: 1n },
      },
      metadata: Cbor.encode(metadata),
      suffixLength: sizeOf(suffix),
    });
  });

  test("codes come out app, wallet, services whatever the map order", () => {
    // {s: ["x"], w: "w1", a: "a1"}
    const cbor = `a3${"6173"}81${"6178"}${"6177"}62${ascii("w1")}${"6161"}62${ascii("a1")}`;
    expect(decodeAttribution(schema2(cbor))).toMatchObject({
      codes: [
        { code: "a1", role: "app" },
        { code: "w1", role: "wallet" },
        { code: "x", role: "service" },
      ],
    });
  });

  test("registries given as byte strings are accepted", () => {
    // {a: "q", r: {a: {c: h'2105', a: h'cc…cc'}}}
    const cbor = `a261616171` + `6172a16161a26163422105616154${"cc".repeat(20)}`;
    expect(decodeAttribution(schema2(cbor))).toMatchObject({
      codes: [{ code: "q", role: "app" }],
      registries: { app: { address: `0x${"cc".repeat(20)}`, chainId: 8453n } },
    });
  });

  test("an empty map is no attribution, as it is for ox, not codes with zero rows", () => {
    expect(decodeAttribution(schema2("a0"))).toEqual({ kind: "none", schemaId: 2 });
    expect(oxFromData(schema2("a0"))).toEqual({ id: 2 });
  });

  test("a map with only metadata, registries or unknown keys is no attribution", () => {
    // {m: {k: [1, -1, 1.5f16]}}
    expect(decodeAttribution(schema2("a1616da1616b830120f93e00"))).toEqual({
      kind: "none",
      schemaId: 2,
    });
    // {r: {a: {c: "0x2105", a: "0xcc…cc"}}}
    const registryOnly = OxAttribution.toDataSuffix({
      appCode: undefined,
      registries: { app: { address: `0x${"cc".repeat(20)}`, chainId: 8453 } },
    });
    expect(decodeAttribution(registryOnly)).toEqual({ kind: "none", schemaId: 2 });
    // {x: 1}
    expect(decodeAttribution(schema2("a1617801"))).toEqual({ kind: "none", schemaId: 2 });
    // {s: []}
    expect(decodeAttribution(schema2("a1617380"))).toEqual({ kind: "none", schemaId: 2 });
  });

  test("unknown keys beside a code are skipped", () => {
    // {x: 1, a: "q"}
    expect(decodeAttribution(schema2("a26178016161" + "6171"))).toMatchObject({
      codes: [{ code: "q", role: "app" }],
    });
  });

  test("metadata beside a code is kept as raw CBOR", () => {
    // {a: "q", m: {k: [1, -1, 1.5f16]}}
    const cbor = "a26161617161" + "6da1616b830120f93e00";
    expect(decodeAttribution(schema2(cbor))).toMatchObject({
      codes: [{ code: "q", role: "app" }],
      metadata: "0xa1616b830120f93e00",
    });
  });

  test.each([
    ["truncated text", "a1616167626173656170", /beyond the buffer/],
    ["truncated map", "a2616161", /beyond the buffer/],
    ["a string length beyond the buffer", "a161617affffffff", /beyond the buffer/],
    ["an array count beyond the buffer", "a161739bffffffffffffffff", /beyond the buffer/],
    ["a stray break", "a16161ff", /break/],
    ["a break inside a definite array", "a16173826161ff", /break/],
    ["an indefinite-length map never closed", "bf6161616b", /beyond the buffer/],
    [
      "an indefinite-length map ending after a key",
      "bf616161616161ff",
      /between a key and its value/,
    ],
    ["an indefinite-length text whose chunk is a byte string", "a161617f4161ff", /chunk/],
    ["an indefinite-length text nested in another", "a161617f7f6161ffff", /chunk/],
    ["an indefinite-length text chunk that is not UTF-8", "a161617f61c3ff", /UTF-8/],
    ["an indefinite-length integer", "a161611f", /reserved/],
    ["an indefinite-length tag", "a16161df6161", /reserved/],
    ["trailing bytes", "a000", /trailing/],
    ["a second top-level item", "a0a0", /trailing/],
    ["reserved additional info", "a161611c", /reserved/],
    ["a malformed two-byte simple value", "a1616df801", /simple value/],
    ["a top-level array", "816161", /not a map/],
    ["a top-level text string", "6161", /not a map/],
    ["invalid UTF-8 text", "a1616162c328", /UTF-8/],
  ])("CBOR with %s is malformed", (_, cbor, reason) => {
    expect(cbor.length % 2).toBe(0);
    expectMalformed(decodeAttribution(schema2(cbor)), 2, reason);
  });

  // {a: "q", m: <metadata>}
  const withMetadata = (metadata: string) => `a261616171616d${metadata}`;

  test("metadata nested up to depth 64 is kept; one level deeper it is ignored and the codes are kept", () => {
    // The top-level map is depth 1 and m's value depth 2: 62 arrays put the integer at depth 64.
    const within = `${"81".repeat(62)}01`;
    expect(decodeAttribution(schema2(withMetadata(within)))).toMatchObject({
      kind: "codes",
      codes: [{ code: "q", role: "app" }],
      metadata: `0x${within}`,
    });
    const past = decodeAttribution(schema2(withMetadata(`${"81".repeat(63)}01`)));
    expect(past).toMatchObject({ kind: "codes", codes: [{ code: "q", role: "app" }] });
    expect(past).not.toHaveProperty("metadata");
  });

  test.each([
    ["definite arrays", `${"81".repeat(20_000)}01`],
    ["indefinite arrays", `${"9f".repeat(20_000)}${"ff".repeat(20_000)}`],
    ["maps", `${"a16178".repeat(10_000)}01`],
    ["tags", `${"c1".repeat(20_000)}01`],
    ["indefinite maps and strings", `${"bf6178".repeat(5_000)}7f6161ff${"ff".repeat(5_000)}`],
  ])(
    "metadata of %s nested thousands deep is skipped without recursion, keeping the codes",
    (_, metadata) => {
      const data = schema2(withMetadata(metadata));
      expect(sizeOf(data)).toBeLessThan(65_535);
      const result = decodeAttribution(data);
      expect(result).toMatchObject({ kind: "codes", codes: [{ code: "q", role: "app" }] });
      expect(result).not.toHaveProperty("metadata");
    },
  );

  test.each([
    ["never closed", `${"81".repeat(1_000)}`, /beyond the buffer/],
    ["with a stray break", `${"81".repeat(1_000)}ff`, /break/],
    ["with an odd indefinite map", `${"81".repeat(100)}bf01ff`, /between a key and its value/],
    ["with bad UTF-8", `${"81".repeat(100)}61c3`, /UTF-8/],
    ["with reserved additional info", `${"81".repeat(100)}1c`, /reserved/],
  ])("deep metadata %s is malformed: its end cannot be found", (_, metadata, reason) => {
    expectMalformed(decodeAttribution(schema2(withMetadata(metadata))), 2, reason);
  });

  test.each([
    ["an integer app code", "a1616105", /not a text string/],
    ["a byte-string wallet code", "a1617743626173", /not a text string/],
    ["a service list that is a number", "a1617305", /neither a text string nor an array/],
    ["a number in the service list", "a161738101", /not a text string/],
    ["an empty app code", "a1616160", /empty code/],
    ["an app code with a control byte", "a16161626101", /printable ASCII/],
    ["an app code holding DEL (0x7f)", "a16161617f", /printable ASCII/],
    ["an app code holding é", "a1616162c3a9", /printable ASCII/],
    ["an empty app code in text chunks", "a161617f6060ff", /empty code/],
    ["an app code holding é in a text chunk", "a161617f616162c3a9ff", /printable ASCII/],
    ["an empty service code in an indefinite array", "a161739f6161" + "60ff", /empty code/],
    ["a service code with a comma", "a161738163612c62", /comma/],
    ["an integer map key", "a1016161", /key is not a text/],
    ["a byte-string map key", "a141616161", /key is not a text/],
    ["duplicate keys", "a26161617861616170", /duplicate/],
  ])("schema 2 with %s is malformed", (_, cbor, reason) => {
    expect(cbor.length % 2).toBe(0);
    expectMalformed(decodeAttribution(schema2(cbor)), 2, reason);
  });

  // {a: "q", w: "v", s: ["z"], r: <r>}
  const withRegistries = (r: string) => `a46161617161776176617381617a6172${r}`;
  const CC = "cc".repeat(20);

  test.each([
    ["r that is not a map", "01", ["app", "wallet"], /not a map/],
    ["r with an integer key", "a101a0", ["app", "wallet"], /key is not a text/],
    ["r with a duplicate key", `a2616101616101`, ["app", "wallet"], /duplicate/],
    ["an app registry that is not a map", "a1616101", ["app"], /not a map/],
    ["an app registry without its chain id", `a16161a1616154${CC}`, ["app"], /lacks c or a/],
    [
      "a wallet registry address of 19 bytes",
      `a16177a26163422105616153${"cc".repeat(19)}`,
      ["wallet"],
      /20 bytes/,
    ],
    [
      "a wallet registry chain id that is not hex",
      `a16177a261636278796161` + `54${CC}`,
      ["wallet"],
      /chain id/,
    ],
    [
      "an app registry chain id longer than 32 bytes",
      `a16161a261635821${"01".repeat(33)}616154${CC}`,
      ["app"],
      /chain id/,
    ],
    [
      "an app registry that is a deeply nested array",
      `a16161${"81".repeat(70)}01`,
      ["app"],
      /not a map/,
    ],
  ])("%s keeps the codes and flags the registry as malformed", (_, r, roles, reason) => {
    const result = decodeAttribution(schema2(withRegistries(r)));
    expect(result).toMatchObject({
      kind: "codes",
      schemaId: 2,
      codes: [
        { code: "q", role: "app" },
        { code: "v", role: "wallet" },
        { code: "z", role: "service" },
      ],
      registryError: { roles, reason: expect.stringMatching(reason) },
    });
    if (result.kind !== "codes") return;
    const registries = result.codes.map((code) => registryOfCode(result, code).kind);
    expect(registries).toEqual([
      roles.includes("app") ? "malformed" : "canonical",
      roles.includes("wallet") ? "malformed" : "canonical",
      "canonical",
    ]);
  });

  test("one malformed registry entry leaves the other role's custom registry in place", () => {
    // r = {a: {c: "0x2105", a: "0xcc…cc"}, w: 5}
    const cbor = withRegistries(
      `a2` + `6161a2616366${ascii("0x2105")}6161782a${ascii(`0x${CC}`)}` + `617705`,
    );
    const result = decodeAttribution(schema2(cbor));
    expect(result).toMatchObject({
      registries: { app: { address: `0x${CC}`, chainId: 8453n } },
      registryError: { roles: ["wallet"], reason: expect.stringMatching(/"r"."w": not a map/) },
    });
    if (result.kind !== "codes") throw new Error("expected codes");
    expect(result.codes.map((code) => registryOfCode(result, code))).toEqual([
      { kind: "custom", registry: { address: `0x${CC}`, chainId: 8453n } },
      { kind: "malformed" },
      { kind: "canonical" },
    ]);
  });

  test("a malformed registry entry: ox drops the registry and keeps the codes, as ours does, but ours flags it", () => {
    // {a: "q", r: {a: {a: h'cc…cc'}}}: the app registry lacks its chain id.
    const data = schema2(`a261616171` + `6172a16161a1616154${CC}`);
    // Note: ox answers as if the app code were in the canonical registry.
    expect(oxFromData(data)).toEqual({ id: 2, appCode: "q" });
    expect(decodeAttribution(data)).toMatchObject({
      codes: [{ code: "q", role: "app" }],
      registryError: { roles: ["app"] },
    });
  });

  test("registryOfCode() places schema 0 codes in the canonical registry and schema 1 codes in theirs", () => {
    const schema0Result = decodeAttribution(schema0(ascii("baseapp")));
    const schema1Result = decodeAttribution(
      OxAttribution.toDataSuffix({
        codes: ["baseapp"],
        codeRegistry: { address: `0x${CC}`, chainId: 1 },
      }),
    );
    if (schema0Result.kind !== "codes" || schema1Result.kind !== "codes")
      throw new Error("expected codes");
    expect(registryOfCode(schema0Result, { code: "baseapp", role: "code" })).toEqual({
      kind: "canonical",
    });
    expect(registryOfCode(schema1Result, { code: "baseapp", role: "code" })).toEqual({
      kind: "custom",
      registry: { address: `0x${CC}`, chainId: 1n },
    });
  });

  test("schema 2 codes use r's registry for app and wallet only; services stay canonical", () => {
    const data = OxAttribution.toDataSuffix({
      appCode: "baseapp",
      walletCode: "privy",
      serviceCodes: ["baseapp"],
      registries: { app: { address: `0x${CC}`, chainId: 8453 } },
    });
    const result = decodeAttribution(data);
    if (result.kind !== "codes") throw new Error("expected codes");
    expect(result.codes.map((code) => [code.code, registryOfCode(result, code)])).toEqual([
      ["baseapp", { kind: "custom", registry: { address: `0x${CC}`, chainId: 8453n } }],
      ["privy", { kind: "canonical" }],
      ["baseapp", { kind: "canonical" }],
    ]);
  });

  test("an integer app code, which ox silently drops, is malformed in ours", () => {
    const data = schema2("a1616105");
    // Note: ox answers { id: 2 } (ignoring the bad field); ours refuses to half-read a suffix.
    expect(oxFromData(data)).toEqual({ id: 2 });
    expectMalformed(decodeAttribution(data), 2, /not a text string/);
  });

  test.each([
    ["an indefinite-length map", "bf6161616bff", { appCode: "k" }, [["k", "app"]]],
    [
      "an indefinite-length service array",
      "a161739f62733162733263733333ff",
      { serviceCodes: ["s1", "s2", "s33"] },
      [
        ["s1", "service"],
        ["s2", "service"],
        ["s33", "service"],
      ],
    ],
    [
      "an app code in text chunks",
      "a161617f62626165736561707060ff",
      { appCode: "baseapp" },
      [["baseapp", "app"]],
    ],
    ["an indefinite-length key", "a17f6161ff6171", { appCode: "q" }, [["q", "app"]]],
    [
      "everything indefinite",
      "bf7f6161ff7f6171ff61739f7f6173ffffff",
      { appCode: "q", serviceCodes: ["s"] },
      [
        ["q", "app"],
        ["s", "service"],
      ],
    ],
    [
      "text chunks for keys and codes",
      "bf7f6161ff7f617aff6177617aff",
      { appCode: "z", walletCode: "z" },
      [
        ["z", "app"],
        ["z", "wallet"],
      ],
    ],
  ])("CBOR with %s decodes, as ox decodes it", (_, cbor, oxAnswer, expected) => {
    const data = schema2(cbor);
    expect(decodeAttribution(data)).toMatchObject({
      kind: "codes",
      schemaId: 2,
      codes: expected.map(([code, role]) => ({ code, role })),
    });
    expect(oxFromData(data)).toEqual({ id: 2, ...oxAnswer });
  });

  test("indefinite-length metadata is kept as its raw CBOR", () => {
    const metadata = "bf616b9f01f93e00ff617a5f4101420203ffff";
    expect(decodeAttribution(schema2(withMetadata(metadata)))).toMatchObject({
      metadata: `0x${metadata}`,
    });
  });

  test("tagged metadata is kept, a tagged code is malformed", () => {
    // {a: "q", m: 1(1700000000)} — Note: ox throws Cbor.UnsupportedTagError on any tag; tags are well-formed CBOR.
    const data = schema2(withMetadata("c11a6553f100"));
    expect(decodeAttribution(data)).toMatchObject({
      codes: [{ code: "q", role: "app" }],
      metadata: "0xc11a6553f100",
    });
    expect(oxFromData(data)).toBe("threw");
    // {a: 0("a")}
    expectMalformed(decodeAttribution(schema2("a16161c06161")), 2, /not a text string/);
  });

  test("trailing bytes, which ox ignores, are malformed in ours", () => {
    // Note: ox's CBOR decoder stops after the first item.
    expect(oxFromData(schema2("a000"))).toEqual({ id: 2 });
    expectMalformed(decodeAttribution(schema2("a000")), 2, /trailing/);
  });

  test("a CBOR length larger than the calldata, or zero, is malformed", () => {
    expectMalformed(decodeAttribution(hex(DD, "a0", "0010", "02", M)), 2, /overruns/);
    expectMalformed(decodeAttribution(hex(DD, "0000", "02", M)), 2, /empty/);
    expectMalformed(decodeAttribution(hex("00", "02", M)), 2, /missing/);
  });
});

/** mulberry32: a seeded generator, so a failing fuzz case can be replayed. */
function createRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const bytes = (length: number) => Array.from({ length }, () => byteHex(int(0, 255))).join("");
  const pick = <T>(items: readonly T[]): T => items[int(0, items.length - 1)] as T;
  return { next, int, bytes, pick };
}

const PRINTABLE_NO_COMMA = Array.from({ length: 0x7f - 0x20 }, (_, i) =>
  String.fromCharCode(0x20 + i),
).filter((c) => c !== ",");
const CODE_PATTERN = /^[\x20-\x2b\x2d-\x7e]+$/;

describe("decodeAttribution() under fuzzing", () => {
  test("2,000 random inputs never throw and never yield codes outside printable ASCII", () => {
    const random = createRandom(8021);
    let withCodes = 0;
    for (let i = 0; i < 2000; i++) {
      // Half the bodies are printable text with commas, so the code paths are reached, not only rejected.
      const body =
        random.next() < 0.5
          ? random.bytes(random.int(0, 80))
          : ascii(
              Array.from({ length: random.int(0, 30) }, () =>
                random.pick([...PRINTABLE_NO_COMMA, ",", ","]),
              ).join(""),
            );
      const bodySize = body.length / 2;
      const variant = i % 4;
      const data =
        variant === 0
          ? hex(body)
          : variant === 1
            ? hex(body, M)
            : variant === 2
              ? hex(body, byteHex(random.pick([0, 1, 2, random.int(0, 255)])), M)
              : hex(body, byteHex(random.int(0, bodySize + 4)), byteHex(random.pick([0, 0, 1])), M);
      let result: Attribution | undefined;
      expect(() => {
        result = decodeAttribution(data);
      }, data).not.toThrow();
      if (result === undefined) throw new Error("unreachable");
      if (variant === 0 && !data.endsWith(M)) expect(result).toEqual({ kind: "none" });
      if (result.kind !== "codes") continue;
      withCodes++;
      for (const { code } of result.codes) expect(code, data).toMatch(CODE_PATTERN);
      expect(result.suffixLength).toBeGreaterThanOrEqual(18);
      expect(result.suffixLength).toBeLessThanOrEqual(sizeOf(data));
      // Wherever ours finds codes, ox (which checks less) finds the same ones.
      const ox = oxFromData(data);
      if (ox !== "threw" && ox?.codes !== undefined)
        expect(result.codes.map((c) => c.code)).toEqual(ox.codes);
    }
    // The generator must actually reach the accepting paths for this test to mean anything.
    expect(withCodes).toBeGreaterThan(50);
  });

  test("1,000 random suffixes built by ox round-trip exactly after random calldata", () => {
    const random = createRandom(4337);
    const code = () =>
      Array.from({ length: random.int(1, 10) }, () => random.pick(PRINTABLE_NO_COMMA)).join("");
    const codeList = (min: number, max: number) =>
      Array.from({ length: random.int(min, max) }, code);
    const address = () => getAddress(`0x${random.bytes(20)}`);
    const chainId = () => random.pick([1, 10, 8453, 84532, random.int(1, 2 ** 48)]);
    const metadataValue = (): unknown =>
      random.pick([
        () => code(),
        () => "café ☕",
        () => random.int(-100_000, 4_000_000_000),
        () => 0.1 + random.int(0, 99),
        () => random.next() < 0.5,
        () => null,
        () => [random.int(0, 30), code()],
        () => ({ nested: code() }),
      ])();

    for (let i = 0; i < 1000; i++) {
      const prefix = random.bytes(random.pick([0, 4, random.int(0, 200)]));
      const schema = random.int(0, 2);
      let suffix: Hex;
      let expected: Attribution;
      if (schema === 0) {
        const list = codeList(1, 6);
        suffix = OxAttribution.toDataSuffix({ codes: list });
        expected = {
          kind: "codes",
          schemaId: 0,
          codes: codes(...list),
          suffixLength: sizeOf(suffix),
        };
      } else if (schema === 1) {
        const list = codeList(1, 6);
        const registry = { address: address(), chainId: chainId() };
        suffix = OxAttribution.toDataSuffix({ codes: list, codeRegistry: registry });
        expected = {
          kind: "codes",
          schemaId: 1,
          codes: codes(...list),
          registry: {
            address: registry.address.toLowerCase() as Hex,
            chainId: BigInt(registry.chainId),
          },
          suffixLength: sizeOf(suffix),
        };
      } else {
        const appCode = random.next() < 0.7 ? code() : undefined;
        const walletCode = random.next() < 0.5 ? code() : undefined;
        const serviceCodes = random.next() < 0.5 ? codeList(0, 4) : undefined;
        const app = random.next() < 0.3 ? { address: address(), chainId: chainId() } : undefined;
        const wallet = random.next() < 0.3 ? { address: address(), chainId: chainId() } : undefined;
        const metadata =
          random.next() < 0.4
            ? Object.fromEntries(
                Array.from({ length: random.int(0, 3) }, (_, k) => [`k${k}`, metadataValue()]),
              )
            : undefined;
        suffix = OxAttribution.toDataSuffix({
          appCode,
          walletCode,
          serviceCodes,
          registries: { app, wallet },
          metadata,
        });
        const expectedCodes: AttributionCode[] = [
          ...(appCode === undefined ? [] : [{ code: appCode, role: "app" as const }]),
          ...(walletCode === undefined ? [] : [{ code: walletCode, role: "wallet" as const }]),
          ...(serviceCodes ?? []).map((service) => ({ code: service, role: "service" as const })),
        ];
        const lower = (registry: { address: Hex; chainId: number }) => ({
          address: registry.address.toLowerCase() as Hex,
          chainId: BigInt(registry.chainId),
        });
        expected =
          expectedCodes.length === 0
            ? { kind: "none", schemaId: 2 }
            : {
                kind: "codes",
                schemaId: 2,
                codes: expectedCodes,
                ...(app === undefined && wallet === undefined
                  ? {}
                  : {
                      registries: {
                        ...(app && { app: lower(app) }),
                        ...(wallet && { wallet: lower(wallet) }),
                      },
                    }),
                // ox leaves out empty metadata.
                ...(metadata === undefined || Object.keys(metadata).length === 0
                  ? {}
                  : { metadata: Cbor.encode(metadata) }),
                suffixLength: sizeOf(suffix),
              };
      }
      const data = hex(prefix, suffix.slice(2));
      const result = decodeAttribution(data);
      expect(result, data).toEqual(expected);
      // ox reads back the same codes and registries, and each code's registry follows its role.
      const ox = OxAttribution.fromData(data);
      if (result.kind === "codes" && result.schemaId === 2 && ox !== undefined) {
        const byRole = { app: ox.registries?.app, wallet: ox.registries?.wallet };
        for (const code of result.codes) {
          const oxRegistry =
            code.role === "app" || code.role === "wallet" ? byRole[code.role] : undefined;
          expect(registryOfCode(result, code), data).toEqual(
            oxRegistry === undefined
              ? { kind: "canonical" }
              : {
                  kind: "custom",
                  registry: {
                    address: oxRegistry.address.toLowerCase(),
                    chainId: BigInt(oxRegistry.chainId),
                  },
                },
          );
        }
        expect(result.codes.filter((c) => c.role === "service").map((c) => c.code)).toEqual(
          ox.serviceCodes ?? [],
        );
      }
    }
  });
});

/** A CBOR value to encode, with the encoding choices left to the fuzzer. */
type CborNode =
  | { t: "text"; v: string }
  | { t: "int"; v: number }
  | { t: "bytes"; v: string }
  | { t: "array"; v: CborNode[] }
  | { t: "map"; v: Array<[CborNode, CborNode]> }
  | { t: "tag"; v: CborNode };

/** Encodes `node`, choosing definite or indefinite lengths (and text chunks) at random. */
function encodeCbor(node: CborNode, random: ReturnType<typeof createRandom>): string {
  const head = (major: number, n: number) =>
    n < 24
      ? byteHex(major * 32 + n)
      : n < 256
        ? byteHex(major * 32 + 24) + byteHex(n)
        : n < 65536
          ? byteHex(major * 32 + 25) + byteHex(n, 2)
          : byteHex(major * 32 + 26) + byteHex(n, 4);
  const indefinite = () => random.next() < 0.4;
  switch (node.t) {
    case "int":
      return node.v >= 0 ? head(0, node.v) : head(1, -1 - node.v);
    case "bytes":
      return head(2, node.v.length / 2) + node.v;
    case "text": {
      const utf8Hex = Buffer.from(node.v, "utf8").toString("hex");
      // Chunks must each be valid UTF-8: only ASCII text is split.
      if (!/^[\x00-\x7f]*$/.test(node.v) || !indefinite())
        return head(3, utf8Hex.length / 2) + utf8Hex;
      let out = "7f";
      for (let at = 0; at < node.v.length;) {
        if (random.next() < 0.1) out += "60"; // an empty chunk
        const size = random.int(1, node.v.length - at);
        out += head(3, size) + ascii(node.v.slice(at, at + size));
        at += size;
      }
      return `${out}ff`;
    }
    case "array": {
      const items = node.v.map((item) => encodeCbor(item, random)).join("");
      return indefinite() ? `9f${items}ff` : head(4, node.v.length) + items;
    }
    case "map":
      return encodeMap(
        node.v.map(([k, v]) => encodeCbor(k, random) + encodeCbor(v, random)),
        random,
      );
    case "tag":
      return head(6, random.int(0, 300)) + encodeCbor(node.v, random);
  }
}

/** A map of already-encoded entries (key and value hex), definite or indefinite at random. */
function encodeMap(entries: readonly string[], random: ReturnType<typeof createRandom>): string {
  const body = entries.join("");
  if (random.next() < 0.4) return `bf${body}ff`;
  return entries.length < 24
    ? byteHex(0xa0 + entries.length) + body
    : `b8${byteHex(entries.length)}${body}`;
}

describe("decodeAttribution() fuzzing schema 2 CBOR encodings", () => {
  test("3,000 random maps in random definite/indefinite encodings decode to their codes; mutated ones never throw", () => {
    const random = createRandom(2049);
    const code = () =>
      Array.from({ length: random.int(1, 12) }, () => random.pick(PRINTABLE_NO_COMMA)).join("");
    const text = (value: string): CborNode => ({ t: "text", v: value });
    /** Metadata of CBOR depth exactly `depth` (1 = a leaf). */
    const metadata = (depth: number): CborNode => {
      if (depth <= 1)
        return random.pick<() => CborNode>([
          () => text(code()),
          () => text("café ☕"),
          () => ({ t: "int", v: random.int(-1000, 70_000) }),
          () => ({ t: "bytes", v: random.bytes(random.int(0, 8)) }),
        ])();
      return random.pick<() => CborNode>([
        () => ({
          t: "array",
          v: [metadata(depth - 1), ...Array.from({ length: random.int(0, 2) }, () => metadata(1))],
        }),
        () => ({ t: "map", v: [[text(`k${random.int(0, 9)}`), metadata(depth - 1)]] }),
        () => ({ t: "tag", v: metadata(depth - 1) }),
      ])();
    };
    let mutatedWithCodes = 0;
    for (let i = 0; i < 3000; i++) {
      const app = random.next() < 0.6 ? code() : undefined;
      const wallet = random.next() < 0.4 ? code() : undefined;
      const services =
        random.next() < 0.4 ? Array.from({ length: random.int(0, 3) }, code) : undefined;
      // Depth of m's value counted from the top-level map (depth 1): within the limit up to 64.
      const metadataDepth =
        random.next() < 0.5
          ? random.pick([random.int(1, 10), random.int(60, 66), random.int(100, 300)])
          : undefined;
      const entries: Array<[CborNode, CborNode]> = [];
      if (app !== undefined) entries.push([text("a"), text(app)]);
      if (wallet !== undefined) entries.push([text("w"), text(wallet)]);
      if (services !== undefined) entries.push([text("s"), { t: "array", v: services.map(text) }]);
      if (random.next() < 0.2) entries.push([text("x"), metadata(random.int(1, 4))]);
      const metadataNode = metadataDepth === undefined ? undefined : metadata(metadataDepth);
      if (metadataNode !== undefined) entries.push([text("m"), metadataNode]);
      entries.sort(() => random.next() - 0.5);
      const metadataHex = metadataNode === undefined ? undefined : encodeCbor(metadataNode, random);
      const cbor = encodeMap(
        entries.map(
          ([k, v]) =>
            encodeCbor(k, random) + (v === metadataNode ? metadataHex : encodeCbor(v, random)),
        ),
        random,
      );
      const data = schema2(cbor, random.bytes(random.int(0, 40)));
      const result = decodeAttribution(data);
      const expectedCodes = [
        ...(app === undefined ? [] : [{ code: app, role: "app" }]),
        ...(wallet === undefined ? [] : [{ code: wallet, role: "wallet" }]),
        ...(services ?? []).map((service) => ({ code: service, role: "service" })),
      ];
      if (expectedCodes.length === 0) {
        expect(result, cbor).toEqual({ kind: "none", schemaId: 2 });
      } else {
        expect(result, cbor).toMatchObject({ kind: "codes", schemaId: 2, codes: expectedCodes });
        const kept = result.kind === "codes" && result.schemaId === 2 ? result.metadata : undefined;
        if (metadataDepth === undefined || metadataDepth + 1 > 64)
          expect(kept, cbor).toBeUndefined();
        else expect(kept, cbor).toBe(`0x${metadataHex}`);
      }
      // ox agrees wherever it has no tag to choke on.
      const ox = oxFromData(data);
      if (ox !== "threw" && expectedCodes.length > 0) {
        expect(ox?.appCode, cbor).toBe(app);
        expect(ox?.walletCode, cbor).toBe(wallet);
      }

      // Then a mutated copy: one byte changed, inserted or removed inside the CBOR.
      const at = random.int(0, cbor.length / 2 - 1);
      const mutatedCbor = random.pick([
        () => cbor.slice(0, at * 2) + random.bytes(1) + cbor.slice(at * 2 + 2),
        () =>
          cbor.slice(0, at * 2) +
          random.pick(["ff", "9f", "bf", "7f", "5f", "c0", "1f", "f8", "18"]) +
          cbor.slice(at * 2),
        () => cbor.slice(0, at * 2) + cbor.slice(at * 2 + 2),
      ])();
      let mutated: Attribution | undefined;
      expect(() => {
        mutated = decodeAttribution(schema2(mutatedCbor));
      }, mutatedCbor).not.toThrow();
      if (mutated?.kind === "codes") {
        mutatedWithCodes++;
        for (const { code: found } of mutated.codes)
          expect(found, mutatedCbor).toMatch(CODE_PATTERN);
      }
    }
    expect(mutatedWithCodes).toBeGreaterThan(100);
  });
});
