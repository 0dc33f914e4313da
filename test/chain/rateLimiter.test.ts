import { describe, expect, test } from "vitest";
import { ARRIVAL_JITTER_MS, callsPerBatch, createRateLimiter, INITIAL_CONCURRENCY, MIN_REQUESTS_PER_SECOND } from "../../src/chain/rateLimiter.js";
import { ShutdownError } from "../../src/errors/base.js";

const limiter = (requestsPerSecond: number, concurrency = 8, signal = new AbortController().signal) =>
  createRateLimiter({ requestsPerSecond, concurrency, signal });

/** A limiter on a clock the test moves (ms). */
function onClock(requestsPerSecond = Number.POSITIVE_INFINITY, concurrency = 32) {
  const clock = { now: 10_000 };
  const pacing = createRateLimiter({ requestsPerSecond, concurrency, signal: new AbortController().signal, now: () => clock.now });
  /** Sends one request at `at` (the clock moves there) and has it answered. */
  const send = async (at: number) => {
    clock.now = at;
    await pacing.run(1, async () => undefined);
  };
  return { clock, pacing, send };
}

/** The rate just under `limit` calls a second: the span of a provider's second plus the arrival jitter. */
const underShown = (limit: number) => (limit * 1_000) / (1_000 + ARRIVAL_JITTER_MS);

describe("createRateLimiter()", () => {
  test("a batch costs one call per call: after a 10-call batch at 5/s, the next request waits for the batch to leave the second", async () => {
    const pacing = limiter(5);
    const sent: number[] = [];
    await pacing.run(10, async (at) => void sent.push(at));
    await pacing.run(1, async (at) => void sent.push(at));
    expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(999);
  });

  test("paces as a provider counts: never more than the rate's calls in any second", async () => {
    const pacing = limiter(10);
    const sent = await Promise.all(Array.from({ length: 25 }, () => pacing.run(1, async (at) => at)));
    for (const at of sent) expect(sent.filter((other) => other >= at && other < at + 999).length).toBeLessThanOrEqual(10);
    expect(Math.max(...sent) - Math.min(...sent)).toBeGreaterThanOrEqual(1_999);
  }, 10_000);

  test("without a ceiling nothing is paced until a provider refuses", async () => {
    const pacing = limiter(Number.POSITIVE_INFINITY, 64);
    const started = performance.now();
    const sent = await Promise.all(Array.from({ length: 500 }, () => pacing.run(100, async (at) => at)));
    expect(Math.max(...sent) - started).toBeLessThan(250);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: Number.POSITIVE_INFINITY, refusedBefore: false });
  });

  test("slow start: one request in flight at first, one more per round trip while others wait", async () => {
    const pacing = limiter(Number.POSITIVE_INFINITY, 4);
    expect(pacing.state().concurrency).toBe(INITIAL_CONCURRENCY);
    let inFlight = 0;
    const most: number[] = [];
    await Promise.all(
      Array.from({ length: 12 }, () =>
        pacing.run(1, async (at) => {
          most.push(++inFlight);
          await new Promise((resolve) => setTimeout(resolve, 20));
          pacing.answered(1, at);
          inFlight--;
        }),
      ),
    );
    // One alone, then two at a time, then three: not doubling (which reaches four by the fifth request).
    expect(most.slice(0, 4)).toEqual([1, 1, 2, 2]);
    expect(most.indexOf(4)).toBeGreaterThanOrEqual(6);
    expect(Math.max(...most)).toBe(4);
    expect(pacing.state().concurrency).toBe(4);
  });

  test("a first refusal sets the rate just under the calls the provider accepted in the second before the refused one left", async () => {
    const { clock, pacing, send } = onClock();
    // Sent more than a second before: not in the provider's count.
    await send(8_000);
    for (let i = 0; i < 5; i++) await send(10_000 + i * 150);
    clock.now = 10_700;
    await send(10_700);
    clock.now = 10_780;
    expect(pacing.refused(10_700, undefined)).toBe(true);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: underShown(5), concurrency: 1, refusedBefore: true });
  });

  test("the calls the provider already counted hold the next request back, past the refusal", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 5; i++) await send(10_000 + i * 100);
    await send(10_450);
    clock.now = 10_530;
    pacing.refused(10_450, undefined);
    let sentAt: number | undefined;
    const next = pacing.run(1, async (at) => void (sentAt = at));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The refused request counts too (many providers count it): two of the burst must leave the span first.
    expect(sentAt).toBeUndefined();
    clock.now = 10_100 + (5 * 1_000) / underShown(5);
    await next;
    expect(sentAt).toBe(clock.now);
  });

  test("a request sent later than it was let go (from another thread) is paced, and refused, from when it left", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 5; i++) await send(10_000 + i * 100);
    // The first left 150 ms after it was let go.
    pacing.left(10_000, 10_150, 1);
    await send(10_450);
    clock.now = 10_530;
    // The provider counted 10,150 to 10,400 in the second before 10,450: five.
    expect(pacing.refused(10_450, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(underShown(5));
    let sentAt: number | undefined;
    const next = pacing.run(1, async (at) => void (sentAt = at));
    clock.now = 10_100 + (5 * 1_000) / underShown(5);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // 10,100 has left the span, but the moved 10,150 has not.
    expect(sentAt).toBeUndefined();
    clock.now = 10_150 + (5 * 1_000) / underShown(5);
    await next;
    expect(sentAt).toBe(clock.now);
  });

  test("refusals of requests sent before the cut only correct its measurement", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 4; i++) await send(10_000 + i * 100);
    await send(10_900);
    await send(10_950);
    clock.now = 11_000;
    expect(pacing.refused(10_950, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(underShown(5));
    // The one before it came back refused too: the provider had counted only four.
    expect(pacing.refused(10_900, undefined)).toBe(false);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: underShown(4), concurrency: 1 });
  });

  test("refused again at or under the limit the provider showed, the rate halves", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 6; i++) await send(10_000 + i * 100);
    clock.now = 10_600;
    pacing.refused(10_500, undefined);
    const measured = pacing.state().requestsPerSecond;
    await send(12_000);
    clock.now = 12_100;
    // Nothing else sent in its second: it shows nothing, and the rate halves.
    expect(pacing.refused(12_000, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(measured / 2);
  });

  test("refused again where it refused before (arrivals bunched), the margin over the provider's second doubles instead", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 6; i++) await send(10_000 + i * 100);
    clock.now = 10_600;
    pacing.refused(10_500, undefined);
    expect(pacing.state().requestsPerSecond).toBe(underShown(5));
    // Paced at 5 a second plus the margin: by the client's clock four in the second before the
    // sixth, but the provider counted five in its own and refused it.
    const spacing = (1_000 + ARRIVAL_JITTER_MS) / 5;
    for (let i = 0; i < 6; i++) await send(12_000 + i * spacing);
    clock.now = 12_000 + 6 * spacing;
    expect(pacing.refused(12_000 + 5 * spacing, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBeCloseTo((5 * 1_000) / (1_000 + 2 * ARRIVAL_JITTER_MS), 9);
    // Once more, later: it doubles again.
    for (let i = 0; i < 6; i++) await send(15_000 + i * (1_000 + 2 * ARRIVAL_JITTER_MS) / 5);
    clock.now = 16_500;
    expect(pacing.refused(15_000 + (5 * (1_000 + 2 * ARRIVAL_JITTER_MS)) / 5, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBeCloseTo((5 * 1_000) / (1_000 + 4 * ARRIVAL_JITTER_MS), 9);
  });

  test("refused again with fewer calls in its second than the provider showed before, the rate halves from those", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 6; i++) await send(10_000 + i * 100);
    clock.now = 10_600;
    pacing.refused(10_500, undefined);
    // The provider lowered its limit: it refuses the third call in a second.
    await send(12_000);
    await send(12_300);
    await send(12_600);
    clock.now = 12_700;
    expect(pacing.refused(12_600, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(2 / 2);
  });

  test("climbed past the limit it showed, a refusal measures the limit again instead of halving", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 6; i++) await send(10_000 + i * 100);
    clock.now = 10_600;
    pacing.refused(10_500, undefined);
    for (let i = 0; i < 5_000 && pacing.state().requestsPerSecond <= 5; i++) pacing.answered(1, clock.now);
    expect(pacing.state().requestsPerSecond).toBeGreaterThan(5);
    for (let i = 0; i < 6; i++) await send(20_000 + i * 150);
    clock.now = 20_900;
    expect(pacing.refused(20_750, undefined)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(underShown(5));
  });

  test("a batch larger than what the provider accepted in its second is refused for its size: the rate stays", async () => {
    const { clock, pacing, send } = onClock();
    await send(10_000);
    await send(10_100);
    clock.now = 10_200;
    expect(pacing.refused(10_150, 1_000, 10)).toBe(false);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: Number.POSITIVE_INFINITY, refusedBefore: false, pausedUntil: 11_200 });
    // A single call refused in the same second is the rate's.
    expect(pacing.refused(10_190, undefined, 1)).toBe(true);
    expect(pacing.state().requestsPerSecond).toBe(underShown(2));
  });

  test("a first answer that is a refusal, with no ceiling, cuts to half the concurrency", () => {
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => 0 });
    expect(pacing.refused(0, undefined)).toBe(true);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: INITIAL_CONCURRENCY / 2, concurrency: 1 });
  });

  test("past the refused rate the climb grows with the rate: a limit shown too low is outgrown", () => {
    let now = 0;
    const pacing = createRateLimiter({ requestsPerSecond: Number.POSITIVE_INFINITY, concurrency: 32, signal: new AbortController().signal, now: () => now });
    pacing.refused(0, undefined);
    expect(pacing.state().requestsPerSecond).toBe(0.5);
    // Half an hour of answers at the rate the limiter allows.
    for (let second = 0; second < 1_800; second++) {
      const calls = Math.max(1, Math.floor(pacing.state().requestsPerSecond));
      for (let i = 0; i < calls; i++) pacing.answered(1, (now += 1_000 / calls));
    }
    // Three times the limit it showed.
    expect(pacing.state().requestsPerSecond).toBeGreaterThan(3);
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
        pacing.run(1, async (at) => {
          most = Math.max(most, ++inFlight);
          await new Promise((resolve) => setTimeout(resolve, 10));
          pacing.answered(1, at);
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

describe("callsPerBatch()", () => {
  test("under a rate, batches fill the pacing's span of ⌈rate⌉ calls exactly, never past the rate's whole calls", () => {
    expect(callsPerBatch(Number.POSITIVE_INFINITY, 500)).toBe(500);
    expect(callsPerBatch(10, 500)).toBe(10);
    expect(callsPerBatch(50, 20)).toBe(10);
    // 4.76 calls a second paces 5 calls a span: batches of 4 would fit one a span.
    expect(callsPerBatch(underShown(5), 500)).toBe(1);
    expect(callsPerBatch(9.5, 500)).toBe(5);
    expect(callsPerBatch(47.6, 500)).toBe(24);
    expect(callsPerBatch(0.2, 500)).toBe(1);
  });
});
