import { describe, expect, test } from "vitest";
import { isRateLimitAnswer } from "../../src/chain/rateLimitErrors.js";

describe("isRateLimitAnswer()", () => {
  test.each([
    ["proxyd's over rate limit", { code: -32016, message: "over rate limit" }],
    ["proxyd's sender limit", { code: -32017, message: "sender is over rate limit" }],
    ["Alchemy's compute units", { code: 429, message: "Your app has exceeded its compute units per second capacity." }],
    ["Infura's project rate", { code: -32005, message: "project ID request rate exceeded" }],
    ["Infura's daily count", { code: -32005, message: "daily request count exceeded, request rate limited" }],
    ["QuickNode's request limit", { code: -32007, message: "request limit reached" }],
    ["a gateway's plain text", { code: -32000, message: "429 Too Many Requests" }],
  ])("recognises %s", (_name, error) => {
    expect(isRateLimitAnswer(error)).toBe(true);
  });

  test.each([
    ["a block-range limit", { code: -32005, message: "Exceeded max range limit for eth_getLogs: 1000" }],
    ["a result limit", { code: -32005, message: "query returned more than 10000 results" }],
    ["an outage", { code: -32011, message: "no backend is currently healthy to serve traffic" }],
    ["a revert", { code: 3, message: "execution reverted" }],
  ])("does not take %s for a rate limit", (_name, error) => {
    expect(isRateLimitAnswer(error)).toBe(false);
  });
});
