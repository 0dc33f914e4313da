import { describe, expect, test } from "vitest";
import { schema0Suffix, schema2Suffix } from "../../src/attribution/erc8021Suffix.js";
import { decodeAttribution, ERC8021_MARKER } from "../../src/decode/erc8021.js";

const M = ERC8021_MARKER.slice(2);
const DD = "0xdddddddd";
const decode = (suffix: string) => decodeAttribution(`${DD}${suffix.slice(2)}`);

describe("ERC-8021 suffix encoders", () => {
  test("write the ERC-8021 sample vectors", () => {
    expect(schema0Suffix(["bc_b8nos5a8"])).toBe(`0x62635f62386e6f733561380b00${M}`);
    expect(schema0Suffix(["baseapp", "morpho"])).toBe(`0x626173656170702c6d6f7270686f0e00${M}`);
    expect(schema2Suffix({ app: "baseapp" })).toBe(`0xa161616762617365617070000b02${M}`);
  });

  test("schema 2 round-trips app, wallet and services through the decoder, in its order", () => {
    const suffix = schema2Suffix({
      services: ["svc_a", "svc_b"],
      wallet: "bc_wallet1",
      app: "my_app",
    });
    expect(decode(suffix)).toEqual({
      kind: "codes",
      schemaId: 2,
      codes: [
        { code: "my_app", role: "app" },
        { code: "bc_wallet1", role: "wallet" },
        { code: "svc_a", role: "service" },
        { code: "svc_b", role: "service" },
      ],
      suffixLength: (suffix.length - 2) / 2,
    });
  });

  test("uses the one-byte CBOR length head for codes of 24 bytes and more and for 24 services and more", () => {
    const long = "x".repeat(200);
    const services = Array.from({ length: 30 }, (_, i) => `s${i}`);
    const decoded = decode(schema2Suffix({ app: long, services }));
    expect(decoded.kind === "codes" && decoded.codes.map((code) => code.code)).toEqual([
      long,
      ...services,
    ]);
  });

  test("refuse a code the decoder would refuse, which would lose every code of the suffix", () => {
    for (const bad of ["", "a,b", "caf\u00e9", "tab\there"]) {
      expect(() => schema2Suffix({ app: bad })).toThrow();
      expect(() => schema2Suffix({ services: ["ok", bad] })).toThrow();
      expect(() => schema0Suffix([bad])).toThrow();
    }
    expect(() => schema0Suffix([])).toThrow(/at least one code/);
    expect(() => schema0Suffix(["x".repeat(256)])).toThrow(/exceed 255 bytes/);
    expect(() => schema2Suffix({ app: "x".repeat(256) })).toThrow(/too long/);
  });
});
