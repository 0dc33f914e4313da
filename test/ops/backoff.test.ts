import { describe, expect, test } from "vitest";
import { backoffDelayMs } from "../../src/ops/backoff.js";

describe("backoffDelayMs()", () => {
  test("stays within [0, initial × 2^retry] and never above the maximum, with full jitter", () => {
    const backoff = { initialDelayMs: 100, maxDelayMs: 1_000 };
    for (let retry = 0; retry < 8; retry++) {
      const ceiling = Math.min(1_000, 100 * 2 ** retry);
      const delays = Array.from({ length: 500 }, () => backoffDelayMs(retry, backoff));
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...delays)).toBeLessThanOrEqual(ceiling);
      // Jitter: the delays spread over the range instead of sitting at its top.
      expect(Math.min(...delays)).toBeLessThan(ceiling / 4);
      expect(Math.max(...delays)).toBeGreaterThan((ceiling * 3) / 4);
    }
  });
});
