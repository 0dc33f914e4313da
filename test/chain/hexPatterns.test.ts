import { describe, expect, test } from "vitest";
import { isHexBytes } from "../../src/chain/hexPatterns.js";

const randomHex = (bytes: number) =>
  `0x${Array.from({ length: bytes }, (_, i) => ((i * 37 + 11) % 256).toString(16).padStart(2, "0")).join("")}`;

describe("isHexBytes", () => {
  // Short inputs go through the regular expression, long ones through the hex decoder: both must agree.
  for (const bytes of [0, 1, 32, 127, 128, 48_000, (1 << 20) + 1]) {
    test(`${bytes} bytes: whole bytes in either letter case pass, anything else fails`, () => {
      const hex = randomHex(bytes);
      expect(isHexBytes(hex)).toBe(true);
      expect(isHexBytes(hex.toUpperCase().replace("0X", "0x"))).toBe(true);
      expect(isHexBytes(`${hex}a`)).toBe(false);
      expect(isHexBytes(hex.replace("0x", "0X"))).toBe(false);
      expect(isHexBytes(hex.slice(2))).toBe(false);
      if (bytes === 0) return;
      const at = 2 + 2 * Math.floor(bytes / 2);
      for (const bad of ["zz", "0g", "g0", " 0", "é0", "0\u0000"]) {
        expect(isHexBytes(hex.slice(0, at) + bad + hex.slice(at + 2))).toBe(false);
        expect(isHexBytes(hex.slice(0, -2) + bad)).toBe(false);
      }
    });
  }

  test("a bad pair after a long good input is still found once the scratch buffer is grown", () => {
    expect(isHexBytes(randomHex(100_000))).toBe(true);
    const shorter = randomHex(50_000);
    expect(isHexBytes(`${shorter.slice(0, -2)}zz`)).toBe(false);
    expect(isHexBytes(shorter)).toBe(true);
  });
});
