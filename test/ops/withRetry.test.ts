import { describe, expect, test } from "vitest";
import { FatalError, RetryableError, ShutdownError } from "../../src/errors/base.js";
import {
  backoffDelayMs,
  MAX_RETRY_AFTER_MS,
  parseRetryAfterMs,
  retryAfterOf,
  withRetry,
} from "../../src/ops/withRetry.js";

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

describe("withRetry()", () => {
  test("retries until success, passing each attempt its index and the policy each failure", async () => {
    const seen: number[] = [];
    const delays: Array<{ count: number; message: string }> = [];
    const result = await withRetry(
      async ({ count }) => {
        seen.push(count);
        if (count < 2) throw new RetryableError(`failure ${count}`);
        return "done";
      },
      {
        retryCount: 5,
        delay: ({ count, error }) => (delays.push({ count, message: (error as Error).message }), 1),
      },
    );
    expect(result).toBe("done");
    expect(seen).toEqual([0, 1, 2]);
    expect(delays).toEqual([
      { count: 0, message: "failure 0" },
      { count: 1, message: "failure 1" },
    ]);
  });

  test("throws the last failure as it was once retryCount retries are spent", async () => {
    let calls = 0;
    const error = await withRetry(
      async () => {
        calls++;
        throw new RetryableError(`failure ${calls}`);
      },
      { retryCount: 3 },
    ).catch((e: unknown) => e);
    expect(calls).toBe(4);
    expect((error as RetryableError).shortMessage).toBe("failure 4");
  });

  test("stops at once on a failure shouldRetry refuses", async () => {
    let calls = 0;
    const fatal = new FatalError("no");
    const error = await withRetry(
      async () => {
        calls++;
        throw fatal;
      },
      {
        retryCount: Number.POSITIVE_INFINITY,
        shouldRetry: ({ error }) => error instanceof RetryableError,
      },
    ).catch((e: unknown) => e);
    expect(error).toBe(fatal);
    expect(calls).toBe(1);
  });

  test("waits the Retry-After a failure carries (through its causes) instead of the policy's delay", async () => {
    const wrapped = new RetryableError("gave up", {
      cause: new RetryableError("HTTP 429", { retryAfterMs: 300 }),
    });
    expect(retryAfterOf(wrapped)).toBe(300);
    const waits: number[] = [];
    let failedAt = 0;
    let retriedAt = 0;
    await withRetry(
      async ({ count }) => {
        if (count === 0) {
          failedAt = performance.now();
          throw wrapped;
        }
        retriedAt = performance.now();
      },
      { delay: 0, onRetry: ({ delayMs }) => waits.push(delayMs) },
    );
    expect(waits).toEqual([300]);
    expect(retriedAt - failedAt).toBeGreaterThanOrEqual(295);
  });

  test("a shutdown ends a wait at once with ShutdownError", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const started = performance.now();
    const error = await withRetry(
      async () => {
        throw new RetryableError("down");
      },
      { retryCount: Number.POSITIVE_INFINITY, delay: 60_000, signal: controller.signal },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ShutdownError);
    expect(performance.now() - started).toBeLessThan(30_000);
  });
});

describe("parseRetryAfterMs()", () => {
  test("reads delay-seconds and HTTP dates, refuses garbage, caps a huge wait", () => {
    const now = Date.parse("Thu, 26 Nov 2026 18:00:00 GMT");
    expect(parseRetryAfterMs("1", now)).toBe(1_000);
    expect(parseRetryAfterMs(" 0 ", now)).toBe(0);
    expect(parseRetryAfterMs("Thu, 26 Nov 2026 18:00:07 GMT", now)).toBe(7_000);
    expect(parseRetryAfterMs("Thu, 26 Nov 2026 17:59:00 GMT", now)).toBe(0);
    expect(parseRetryAfterMs(["2", "9"], now)).toBe(2_000);
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
    expect(parseRetryAfterMs("", now)).toBeUndefined();
    expect(parseRetryAfterMs("1.5", now)).toBeUndefined();
    expect(parseRetryAfterMs("-3", now)).toBeUndefined();
    expect(parseRetryAfterMs("soon", now)).toBeUndefined();
    expect(parseRetryAfterMs("99999999", now)).toBe(MAX_RETRY_AFTER_MS);
  });
});
