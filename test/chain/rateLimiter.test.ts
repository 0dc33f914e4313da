import { describe, expect, test } from "vitest";
import { createRateLimiter, MIN_REQUESTS_PER_SECOND } from "../../src/chain/rateLimiter.js";
import { ShutdownError } from "../../src/errors/base.js";

const limiter = (requestsPerSecond: number, concurrency = 8, signal = new AbortController().signal) =>
  createRateLimiter({ requestsPerSecond, concurrency, signal });

describe("createRateLimiter()", () => {
  test("a batch costs one token per call: after a 10-call batch at 5/s, the next request waits for the debt", async () => {
    const pacing = limiter(5);
    const sent: number[] = [];
    await pacing.run(10, async (at) => void sent.push(at));
    await pacing.run(1, async (at) => void sent.push(at));
    // The bucket held 5 tokens: the batch leaves at once and owes 5, then 1 more is needed: 6 tokens at 5/s.
    expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(1_150);
  });

  test("a refusal halves the rate and the concurrency once per round trip; answers climb back, never past the ceiling", async () => {
    const pacing = limiter(40, 8);
    const sentAt = performance.now();
    expect(pacing.refused(sentAt, undefined)).toBe(true);
    // Sent before the cut: the provider refused what the client sent at the old rate.
    expect(pacing.refused(sentAt, undefined)).toBe(false);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: 20, concurrency: 4 });
    for (let i = 0; i < 20; i++) pacing.answered(1, performance.now());
    const climbed = pacing.state();
    expect(climbed.requestsPerSecond).toBeGreaterThan(20);
    expect(climbed.concurrency).toBeGreaterThan(4);
    for (let i = 0; i < 100_000; i++) pacing.answered(1, performance.now());
    expect(pacing.state()).toMatchObject({ requestsPerSecond: 40, concurrency: 8 });
  });

  test("without a ceiling nothing is paced until a provider refuses", async () => {
    const pacing = limiter(Number.POSITIVE_INFINITY, 64);
    const started = performance.now();
    const sent = await Promise.all(Array.from({ length: 500 }, () => pacing.run(100, async (at) => at)));
    expect(Math.max(...sent) - started).toBeLessThan(250);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: Number.POSITIVE_INFINITY, refusedBefore: false });
  });

  test("a refusal sets the rate to half of what the provider accepted in the second before the refused request left", () => {
    let now = 10_000;
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => now });
    // 30 calls answered that left more than a second ago show nothing about the provider's second now.
    pacing.answered(30, now - 1_500);
    for (let i = 0; i < 12; i++) pacing.answered(1, now - 900 + i * 50);
    now += 50;
    expect(pacing.refused(now - 10, undefined)).toBe(true);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: 6, concurrency: 16, refusedBefore: true });
  });

  test("a batch larger than what the provider accepted in its second is refused for its size: the rate stays", () => {
    let now = 10_000;
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => now });
    pacing.answered(1, now - 300);
    pacing.answered(1, now - 200);
    now += 50;
    expect(pacing.refused(now - 10, 1_000, 10)).toBe(false);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, refusedBefore: false, pausedUntil: now + 1_000 });
    // A single call refused in the same second is the rate's.
    expect(pacing.refused(now - 5, undefined, 1)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(1);
  });

  test("answers to requests of the refused one's second, still in flight at the cut, raise the limit it showed", () => {
    let now = 10_000;
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => now });
    pacing.answered(1, now - 500);
    pacing.answered(1, now - 400);
    now += 80;
    expect(pacing.refused(now - 80, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(1);
    // Three requests of the same burst come back accepted a little later: the provider allowed 5.
    for (let i = 0; i < 3; i++) pacing.answered(1, now - 80);
    const raised = pacing.state().requestsPerSecond;
    expect(raised).toBeGreaterThanOrEqual(2.5);
    // An answer to a request sent well after the refused one says nothing about that second.
    pacing.answered(1, now + 2_000);
    expect(pacing.state().requestsPerSecond).toBeLessThan(raised + 1);
  });

  test("a first answer that is a refusal, with no ceiling, cuts to half the concurrency", () => {
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => 0 });
    expect(pacing.refused(0, undefined)).toBe(true);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: 16, concurrency: 16 });
  });

  test("past the refused rate the climb grows with the rate: a limit shown too low is outgrown", () => {
    let now = 0;
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => now });
    pacing.answered(1, 0);
    now = 100;
    pacing.refused(50, undefined);
    expect(pacing.state().requestsPerSecond).toBe(0.5);
    // Ten minutes of answers at the rate the limiter allows.
    for (let second = 0; second < 600; second++) {
      const calls = Math.max(1, Math.floor(pacing.state().requestsPerSecond));
      for (let i = 0; i < calls; i++) pacing.answered(1, (now += 1_000 / calls));
    }
    expect(pacing.state().requestsPerSecond).toBeGreaterThan(5);
  });

  test("cuts at most once a second: a provider's second may still hold the old rate's requests", () => {
    let now = 0;
    const pacing = createRateLimiter({ requestsPerSecond: 40, concurrency: 8, signal: new AbortController().signal, now: () => now });
    expect(pacing.refused(now, undefined)).toBe(true);
    now = 500;
    expect(pacing.refused(now, undefined)).toBe(false);
    now = 1_000;
    expect(pacing.refused(now, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(10);
  });

  test("the rate never falls below its floor, however many refusals", () => {
    let now = 0;
    const pacing = createRateLimiter({ requestsPerSecond: 10, concurrency: 8, signal: new AbortController().signal, now: () => now });
    for (let i = 0; i < 50; i++) pacing.refused((now += 1_000), undefined);
    expect(pacing.state().requestsPerSecond).toBe(MIN_REQUESTS_PER_SECOND);
    expect(pacing.state().concurrency).toBe(1);
  });

  test("a Retry-After holds every request until it expires", async () => {
    const pacing = limiter(1_000);
    const refusedAt = performance.now();
    pacing.refused(refusedAt, 300);
    const sent = await Promise.all([1, 2, 3].map(() => pacing.run(1, async (at) => at)));
    for (const at of sent) expect(at - refusedAt).toBeGreaterThanOrEqual(299);
  });

  test("never lets more requests out at once than the concurrency limit", async () => {
    const pacing = limiter(1_000, 2);
    let inFlight = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        pacing.run(1, async () => {
          most = Math.max(most, ++inFlight);
          await new Promise((resolve) => setTimeout(resolve, 10));
          inFlight--;
        }),
      ),
    );
    expect(most).toBe(2);
  });

  test("a shutdown rejects the requests still waiting with ShutdownError", async () => {
    const controller = new AbortController();
    const pacing = limiter(1, 1, controller.signal);
    pacing.refused(performance.now(), 60_000);
    const waiting = pacing.run(1, async () => "sent").catch((e: unknown) => e);
    controller.abort();
    expect(await waiting).toBeInstanceOf(ShutdownError);
  });
});
