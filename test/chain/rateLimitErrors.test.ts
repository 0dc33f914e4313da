import { describe, expect, test } from "vitest";
import { isRateLimitAnswer, rateLimitWaitMs } from "../../src/chain/rateLimitErrors.js";
import { MAX_RETRY_AFTER_MS } from "../../src/ops/withRetry.js";

describe("isRateLimitAnswer()", () => {
  test.each([
    ["proxyd's over rate limit", { code: -32016, message: "over rate limit" }],
    ["proxyd's sender limit", { code: -32017, message: "sender is over rate limit" }],
    [
      "Alchemy's compute units",
      { code: 429, message: "Your app has exceeded its compute units per second capacity." },
    ],
    ["Infura's project rate", { code: -32005, message: "project ID request rate exceeded" }],
    [
      "Infura's daily count",
      { code: -32005, message: "daily request count exceeded, request rate limited" },
    ],
    ["QuickNode's request limit", { code: -32007, message: "request limit reached" }],
    ["a gateway's plain text", { code: -32000, message: "429 Too Many Requests" }],
  ])("recognises %s", (_name, error) => {
    expect(isRateLimitAnswer(error)).toBe(true);
  });

  test.each([
    [
      "a block-range limit",
      { code: -32005, message: "Exceeded max range limit for eth_getLogs: 1000" },
    ],
    ["a result limit", { code: -32005, message: "query returned more than 10000 results" }],
    ["an outage", { code: -32011, message: "no backend is currently healthy to serve traffic" }],
    ["a revert", { code: 3, message: "execution reverted" }],
  ])("does not take %s for a rate limit", (_name, error) => {
    expect(isRateLimitAnswer(error)).toBe(false);
  });
});

describe("rateLimitWaitMs()", () => {
  test("reads Infura's backoff_seconds, at the top of data or under data.rate", () => {
    expect(rateLimitWaitMs({ current_rps: 13.3, allowed_rps: 10, backoff_seconds: 30 })).toBe(
      30_000,
    );
    expect(rateLimitWaitMs({ rate: { backoff_seconds: 1.5 } })).toBe(1_500);
    expect(rateLimitWaitMs({ backoff_seconds: "2" })).toBe(2_000);
  });

  test("ignores what is absent or hostile, and caps a wait like Retry-After", () => {
    for (const data of [
      undefined,
      null,
      "30",
      [30],
      {},
      { backoff_seconds: -1 },
      { backoff_seconds: "soon" },
      { backoff_seconds: Number.NaN },
    ])
      expect(rateLimitWaitMs(data)).toBeUndefined();
    expect(rateLimitWaitMs({ backoff_seconds: 1e12 })).toBe(MAX_RETRY_AFTER_MS);
  });
});
