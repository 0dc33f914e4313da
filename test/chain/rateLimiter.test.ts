import { afterEach, describe, expect, test, vi } from "vitest";
import {
  DECREASE,
  MAX_PROBE_AFTER_MS,
  PACE_SHARE,
  PROBE_AFTER_MS,
  RECOVERY_MS,
} from "../../src/chain/adaptiveRate.js";
import {
  callsPerBatch,
  createRateLimiter,
  HEAD_RESERVED_REQUESTS,
  HEAD_TURNS_PER_BACKGROUND,
  INITIAL_CONCURRENCY,
  MIN_REQUESTS_PER_SECOND,
  type RateLimiter,
} from "../../src/chain/rateLimiter.js";
import { binomialTail } from "../../src/chain/binomialTail.js";
import { ShutdownError } from "../../src/errors/base.js";

const limiter = (
  requestsPerSecond: number,
  concurrency = 8,
  signal = new AbortController().signal,
) => createRateLimiter({ requestsPerSecond, concurrency, signal });

/** A limiter on a clock the test moves (ms). */
function onClock(requestsPerSecond = Number.POSITIVE_INFINITY, concurrency = 32) {
  const clock = { now: 10_000 };
  const pacing = createRateLimiter({
    requestsPerSecond,
    concurrency,
    signal: new AbortController().signal,
    now: () => clock.now,
  });
  /** Sends one request at `at` (the clock moves there) and has it answered. */
  const send = async (at: number) => {
    clock.now = at;
    const sentAt = await pacing.run(1, async (sent) => sent);
    pacing.answered(1, sentAt);
  };
  return { clock, pacing, send };
}

/** A deterministic random source (mulberry32), so a simulated run is the same every time. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Provider = {
  /** Calls admitted over a sliding second; beyond, refused. Infinity: no limit. */
  limit: number;
  /** Share of requests refused at random whatever the rate. */
  stray: number;
  latencyMs: number;
};

/**
 * Runs `workers` request loops through `pacing` against a simulated provider for `ms` of fake time.
 * A refused request is reported, backs off (full jitter, as the client does) and is asked again.
 */
async function simulate(
  pacing: RateLimiter,
  provider: Provider,
  workers: number,
  ms: number,
  random: () => number,
) {
  const admitted: number[] = [];
  const counts = { answered: 0, refused: 0 };
  let running = true;
  const admit = (at: number) => {
    while (admitted.length > 0 && admitted[0]! <= at - 1_000) admitted.shift();
    if (admitted.length >= provider.limit || random() < provider.stray) return false;
    admitted.push(at);
    return true;
  };
  const sleep = (wait: number) => new Promise((resolve) => setTimeout(resolve, wait));
  const loop = async () => {
    let refusals = 0;
    while (running) {
      const outcome = await pacing.run(
        1,
        async (sentAt) => {
          const ok = admit(sentAt);
          await sleep(provider.latencyMs);
          return { ok, sentAt };
        },
        "background",
      );
      if (outcome.ok) {
        counts.answered++;
        refusals = 0;
        pacing.answered(1, outcome.sentAt);
      } else {
        counts.refused++;
        pacing.refused(outcome.sentAt, undefined);
        await sleep(random() * Math.min(5_000, 100 * 2 ** refusals++));
      }
    }
  };
  const loops = Array.from({ length: workers }, loop);
  await vi.advanceTimersByTimeAsync(ms);
  running = false;
  await vi.advanceTimersByTimeAsync(10_000);
  await Promise.all(loops);
  return counts;
}

describe("createRateLimiter()", () => {
  afterEach(() => void vi.useRealTimers());

  test("spreads calls evenly at the rate: never two closer than 1/rate less the pacing slack", async () => {
    const pacing = limiter(20);
    const sent = await Promise.all(
      Array.from({ length: 25 }, () => pacing.run(1, async (at) => at)),
    );
    sent.sort((a, b) => a - b);
    for (let i = 2; i < sent.length; i++)
      expect(sent[i]! - sent[i - 2]!).toBeGreaterThanOrEqual(2 * 50 - 21);
    for (const at of sent)
      expect(sent.filter((other) => other >= at && other < at + 999).length).toBeLessThanOrEqual(
        21,
      );
  }, 10_000);

  test("a batch costs one call per call: after a 10-call batch at 5/s, the next request waits for its 2 s", async () => {
    const pacing = limiter(5);
    const sent: number[] = [];
    await pacing.run(10, async (at) => void sent.push(at));
    await pacing.run(1, async (at) => void sent.push(at));
    expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(1_975);
  });

  test("without a ceiling nothing is paced until a provider refuses", async () => {
    const pacing = limiter(Number.POSITIVE_INFINITY, 64);
    const started = performance.now();
    const sent = await Promise.all(
      Array.from({ length: 500 }, () => pacing.run(100, async (at) => at)),
    );
    expect(Math.max(...sent) - started).toBeLessThan(250);
    expect(pacing.state()).toMatchObject({
      requestsPerSecond: Number.POSITIVE_INFINITY,
      refusedBefore: false,
    });
  });

  test("slow start: one request in flight at first, one more per round trip while others wait", async () => {
    const pacing = limiter(Number.POSITIVE_INFINITY, 4);
    expect(pacing.state().concurrency).toBe(INITIAL_CONCURRENCY);
    let inFlight = 0;
    const most: number[] = [];
    await Promise.all(
      Array.from({ length: 12 }, () =>
        pacing.run(
          1,
          async (at) => {
            most.push(++inFlight);
            await new Promise((resolve) => setTimeout(resolve, 20));
            pacing.answered(1, at);
            inFlight--;
          },
          "background",
        ),
      ),
    );
    // One alone, then two at a time, then three: not doubling (which reaches four by the fifth request).
    expect(most.slice(0, 4)).toEqual([1, 1, 2, 2]);
    expect(most.indexOf(4)).toBeGreaterThanOrEqual(6);
    expect(Math.max(...most)).toBe(4);
  });

  test("one refusal among many answered calls at the same rate is a retry, not a new ceiling", async () => {
    const { clock, pacing, send } = onClock(10);
    for (let i = 0; i < 60; i++) await send(10_000 + i * 100);
    clock.now = 16_050;
    expect(pacing.refused(16_000, undefined)).toBe(false);
    for (let i = 0; i < 40; i++) await send(16_100 + i * 100);
    clock.now = 20_050;
    expect(pacing.refused(20_000, undefined)).toBe(false);
    expect(pacing.state()).toMatchObject({ requestsPerSecond: 10, refusedBefore: false });
  });

  test("refusals more than strays would explain cut the rate to just under what the provider accepted in the second before", async () => {
    const { clock, pacing, send } = onClock();
    // Sent more than a second before: not in the provider's count.
    await send(8_000);
    for (let i = 0; i < 5; i++) await send(10_000 + i * 150);
    // Five refusals in a row after six answers: strays at 5% would do that less than once in a thousand.
    for (let i = 1; i < 5; i++) {
      clock.now = 10_700 + i;
      expect(pacing.refused(10_700 + i, undefined)).toBe(false);
    }
    clock.now = 10_750;
    expect(pacing.refused(10_740, undefined)).toBe(true);
    expect(pacing.state()).toMatchObject({
      requestsPerSecond: 5 * PACE_SHARE,
      ceiling: 5,
      refusedBefore: true,
    });
  });

  test("refusals of requests sent before a cut were the old rate's: they cut nothing", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 5; i++) await send(10_000 + i * 100);
    clock.now = 10_600;
    for (let i = 1; i < 4; i++) pacing.refused(10_500 + i, undefined);
    expect(pacing.refused(10_550, undefined)).toBe(true);
    const cut = pacing.state();
    clock.now = 10_700;
    for (let i = 0; i < 5; i++) expect(pacing.refused(10_560 + i, undefined)).toBe(false);
    expect(pacing.state()).toEqual(cut);
  });

  test("refused again as a share at the limit it found, the rate drops by DECREASE and is back near the limit within RECOVERY_MS", async () => {
    const { clock, pacing, send } = onClock();
    for (let i = 0; i < 5; i++) await send(10_000 + i * 100);
    clock.now = 10_600;
    for (let i = 0; i < 4; i++) pacing.refused(10_500 + i, undefined);
    const before = pacing.state().requestsPerSecond;
    expect(before).toBe(5 * PACE_SHARE);
    // Paced at the limit found, a provider that counts over 10 s refuses a share.
    for (let i = 0; i < 10; i++) await send(12_000 + (i * 1_000) / before);
    clock.now = 14_000;
    for (let i = 1; i < 5; i++) expect(pacing.refused(13_900 + i, undefined)).toBe(false);
    expect(pacing.refused(13_950, undefined)).toBe(true);
    const { ceiling } = pacing.state();
    expect(ceiling).toBeCloseTo(before, 9);
    expect(pacing.state().requestsPerSecond).toBeCloseTo(before * DECREASE, 9);
    // On time alone, quickly at first (CUBIC's concave approach), then flat near the limit.
    clock.now = 14_000 + RECOVERY_MS / 2;
    const halfway = pacing.state().requestsPerSecond;
    expect(halfway - before * DECREASE).toBeGreaterThan(
      0.8 * (ceiling * PACE_SHARE - before * DECREASE),
    );
    clock.now = 14_000 + RECOVERY_MS;
    expect(pacing.state().requestsPerSecond).toBeCloseTo(ceiling * PACE_SHARE, 9);
  });

  test("recovery follows time, not answers: the rate holds just under the limit found, then probes above it while used", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const pacing = createRateLimiter({
      requestsPerSecond: Number.POSITIVE_INFINITY,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    const start = performance.now();
    for (let i = 0; i < 3; i++) pacing.refused(start, undefined);
    const found = pacing.state().requestsPerSecond;
    // A sender with a call always waiting (the rate is its limit), and no answer ever.
    let running = true;
    const sender = (async () => {
      while (running) await pacing.run(1, async () => undefined, "background");
    })();
    await vi.advanceTimersByTimeAsync(PROBE_AFTER_MS - 1);
    expect(pacing.state().requestsPerSecond).toBe(found);
    // Time alone lifts it: doubled 5 s into the probe (to the last call's time), then faster.
    await vi.advanceTimersByTimeAsync(5_001);
    expect(pacing.state().requestsPerSecond).toBeGreaterThan(1.7 * found);
    expect(pacing.state().requestsPerSecond).toBeLessThanOrEqual(2 * found);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(pacing.state().requestsPerSecond).toBeGreaterThan(6 * found);
    running = false;
    await vi.advanceTimersByTimeAsync(1_000);
    await sender;
  });

  test("the rate never falls below its floor, however many refusals", () => {
    let now = 0;
    const pacing = createRateLimiter({
      requestsPerSecond: 10,
      concurrency: 8,
      signal: new AbortController().signal,
      now: () => now,
    });
    for (let i = 0; i < 200; i++) pacing.refused((now += 500), undefined);
    expect(pacing.state().requestsPerSecond).toBe(MIN_REQUESTS_PER_SECOND);
  });

  test("a batch larger than what the provider accepted in its second is refused for its size: the rate stays", async () => {
    const { clock, pacing, send } = onClock();
    await send(10_000);
    await send(10_100);
    clock.now = 10_200;
    expect(pacing.refused(10_150, 1_000, 10)).toBe(false);
    expect(pacing.refused(10_160, undefined, 10)).toBe(false);
    expect(pacing.state()).toMatchObject({
      requestsPerSecond: Number.POSITIVE_INFINITY,
      refusedBefore: false,
      pausedUntil: 11_200,
    });
  });

  test("a Retry-After holds every request until it expires", async () => {
    const pacing = limiter(1_000);
    const refusedAt = performance.now();
    pacing.refused(refusedAt, 300);
    const sent = await Promise.all([1, 2, 3].map(() => pacing.run(1, async (at) => at)));
    for (const at of sent) expect(at - refusedAt).toBeGreaterThanOrEqual(299);
  });

  test("head requests go before every background request waiting, and have slots of their own", async () => {
    const pacing = limiter(1_000, 2);
    const order: string[] = [];
    const release: Array<() => void> = [];
    const hold = (name: string) => async () => {
      order.push(name);
      await new Promise<void>((resolve) => release.push(resolve));
    };
    // Background requests fill the slots (one, at the slow start); more wait behind them.
    const background = Array.from({ length: 6 }, (_, i) =>
      pacing.run(1, hold(`background ${i}`), "background"),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const heads = Array.from({ length: HEAD_RESERVED_REQUESTS }, (_, i) =>
      pacing.run(1, hold(`head ${i}`)),
    );
    const started = (prefix: string) => order.filter((o) => o.startsWith(prefix)).length;
    for (let i = 0; i < 250 && started("head") < HEAD_RESERVED_REQUESTS; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    // Every head request left while the background ones still held both slots.
    expect(started("head")).toBe(HEAD_RESERVED_REQUESTS);
    expect(started("background")).toBe(pacing.state().concurrency);
    while (order.length < 6 + HEAD_RESERVED_REQUESTS) {
      release.splice(0).forEach((go) => go());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    release.splice(0).forEach((go) => go());
    await Promise.all([...background, ...heads]);
  }, 10_000);

  test(`when both classes want more than the budget, one background request goes for every ${HEAD_TURNS_PER_BACKGROUND} head ones`, async () => {
    const order: string[] = [];
    // On fake timers: a loaded machine firing the pacer's timer late would let a burst through the
    // head's reserved slots, which is the point of those slots, not of this turn-taking.
    vi.useFakeTimers();
    try {
      const clock = () => Date.now();
      const pacing = createRateLimiter({
        requestsPerSecond: 200,
        concurrency: 1,
        signal: new AbortController().signal,
        now: clock,
      });
      const all = [
        ...Array.from({ length: 20 }, () =>
          pacing.run(1, async () => void order.push("background"), "background"),
        ),
        ...Array.from({ length: 20 }, () => pacing.run(1, async () => void order.push("head"))),
      ];
      const done = Promise.all(all);
      await vi.runAllTimersAsync();
      await done;
    } finally {
      vi.useRealTimers();
    }
    // The first background request left before any head one was asked for; then the head's turns.
    expect(order.slice(1, 11)).toEqual([
      ...Array(HEAD_TURNS_PER_BACKGROUND).fill("head"),
      "background",
      ...Array(HEAD_TURNS_PER_BACKGROUND).fill("head"),
      "background",
    ]);
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

describe("createRateLimiter() against a simulated provider (fake clock)", () => {
  afterEach(() => void vi.useRealTimers());
  const fake = () => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });

  test("3% of requests refused at random with no real limit: the rate never falls under 80% of the ceiling, and no cut comes from them", async () => {
    fake();
    const pacing = createRateLimiter({
      requestsPerSecond: 50,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    const counts = await simulate(
      pacing,
      { limit: Number.POSITIVE_INFINITY, stray: 0.03, latencyMs: 60 },
      8,
      120_000,
      seeded(41),
    );
    expect(counts.refused).toBeGreaterThan(100);
    expect(pacing.state().refusedBefore).toBe(false);
    expect(pacing.state().requestsPerSecond).toBeGreaterThanOrEqual(0.8 * 50);
    expect(counts.answered / 120).toBeGreaterThanOrEqual(0.8 * 50 * 0.97);
  }, 60_000);

  test("a real limit of 5 calls a sliding second is found: at least 90% of it answered, at most 2% of requests refused", async () => {
    fake();
    const pacing = createRateLimiter({
      requestsPerSecond: Number.POSITIVE_INFINITY,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    const counts = await simulate(
      pacing,
      { limit: 5, stray: 0, latencyMs: 80 },
      4,
      120_000,
      seeded(7),
    );
    expect(pacing.state().refusedBefore).toBe(true);
    expect(counts.answered / 120).toBeGreaterThanOrEqual(0.9 * 5);
    expect(counts.refused / (counts.answered + counts.refused)).toBeLessThanOrEqual(0.02);
  }, 60_000);

  test("probes against a hard limit back off: over 20 minutes at 1 call a second, under 2% of requests refused", async () => {
    fake();
    const pacing = createRateLimiter({
      requestsPerSecond: Number.POSITIVE_INFINITY,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    const minutes = 20;
    const counts = await simulate(
      pacing,
      { limit: 1, stray: 0, latencyMs: 80 },
      4,
      minutes * 60_000,
      seeded(11),
    );
    // With a probe every PROBE_AFTER_MS, each then costing about two refusals, 73 of 1,177 were (6.2%).
    const everyHold = (minutes * 60_000) / PROBE_AFTER_MS;
    expect(counts.refused).toBeLessThan(everyHold / 2);
    expect(counts.refused / (counts.answered + counts.refused)).toBeLessThan(0.02);
    expect(counts.answered / (minutes * 60)).toBeGreaterThanOrEqual(0.9);
    expect(MAX_PROBE_AFTER_MS).toBeGreaterThan(PROBE_AFTER_MS);
  }, 60_000);

  test("a request another thread sends late holds the next back: no six departures within a second at 5/s", async () => {
    fake();
    // Paced at the held pace under a limit of 5 a second; each answer keeps the sending thread
    // busy decoding, so a request let go meanwhile leaves when the thread is free.
    const pacing = createRateLimiter({
      requestsPerSecond: 5 * PACE_SHARE,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    const random = seeded(5);
    const departures: number[] = [];
    let threadFreeAt = 0;
    const sleep = (wait: number) => new Promise((resolve) => setTimeout(resolve, wait));
    let running = true;
    const loop = async () => {
      while (running)
        await pacing.run(
          1,
          async (sentAt) => {
            await sleep(Math.max(0, threadFreeAt - performance.now()));
            const leftAt = performance.now();
            departures.push(leftAt);
            pacing.left(sentAt, leftAt, 1);
            await sleep(80);
            // Decoding a large answer: up to 300 ms of the thread's time.
            threadFreeAt = Math.max(threadFreeAt, performance.now()) + random() * 300;
            await sleep(Math.max(0, threadFreeAt - performance.now()));
            pacing.answered(1, leftAt);
          },
          "background",
          true,
        );
    };
    const loops = Array.from({ length: 4 }, loop);
    await vi.advanceTimersByTimeAsync(60_000);
    running = false;
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(loops);
    expect(departures.length).toBeGreaterThan(200);
    const crowded = departures.filter((at, i) => i >= 5 && at - departures[i - 5]! < 1_000);
    expect(crowded).toEqual([]);
  }, 60_000);

  test("a sender slower than its rate (application-limited) does not grow the rate past its use, nor send bursts", async () => {
    fake();
    const pacing = createRateLimiter({
      requestsPerSecond: Number.POSITIVE_INFINITY,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    await simulate(pacing, { limit: 5, stray: 0, latencyMs: 50 }, 8, 5_000, seeded(9));
    const found = pacing.state().ceiling;
    expect(found).toBe(5);
    // Then the client's own work is the limit: four requests at once every 1.2 s (3.3 a second).
    const departures: number[] = [];
    for (let burst = 0; burst < 250; burst++) {
      const sent = Array.from({ length: 4 }, () =>
        pacing.run(
          1,
          async (sentAt) => {
            departures.push(sentAt);
            pacing.answered(1, sentAt);
          },
          "background",
        ),
      );
      await vi.advanceTimersByTimeAsync(1_200);
      await Promise.all(sent);
    }
    // Probing past the hold (PROBE_AFTER_MS) on time alone made it about 10^6 calls a second.
    expect(pacing.state().requestsPerSecond).toBeLessThan(1.5 * found);
    const bunched = departures.filter((at, i) => i >= 3 && at - departures[i - 3]! < 100);
    expect(bunched).toEqual([]);
  }, 60_000);

  test("a ceiling learnt from refusals that stop is outgrown within seconds of the probe", async () => {
    fake();
    const pacing = createRateLimiter({
      requestsPerSecond: 50,
      concurrency: 32,
      signal: new AbortController().signal,
    });
    await simulate(pacing, { limit: 5, stray: 0, latencyMs: 50 }, 8, 10_000, seeded(3));
    expect(pacing.state().requestsPerSecond).toBeLessThan(10);
    // The provider lifts its limit: no more refusals; the rate climbs back to the ceiling on time alone.
    await simulate(
      pacing,
      { limit: Number.POSITIVE_INFINITY, stray: 0, latencyMs: 50 },
      8,
      PROBE_AFTER_MS + 10_000,
      seeded(4),
    );
    expect(pacing.state().requestsPerSecond).toBe(50);
  }, 60_000);
});

describe("createRateLimiter(): a raised limit with strays around (fake clock)", () => {
  afterEach(() => void vi.useRealTimers());

  test.each([3, 4])(
    "a probe a stray ends finds the same limit, and the next outgrows it (seed %i)",
    async (seed) => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
      const pacing = createRateLimiter({
        requestsPerSecond: 50,
        concurrency: 32,
        signal: new AbortController().signal,
      });
      await simulate(pacing, { limit: 5, stray: 0, latencyMs: 50 }, 8, 10_000, seeded(seed));
      expect(pacing.state().ceiling).toBe(5);
      // The provider lifts its limit but still refuses 3% at random: one refusal ends a probe
      // (MIN_PROBE_REFUSALS_TO_CUT), so a stray in its first calls holds the old limit a while longer.
      await simulate(
        pacing,
        { limit: Number.POSITIVE_INFINITY, stray: 0.03, latencyMs: 50 },
        16,
        3 * PROBE_AFTER_MS + 10_000,
        seeded(seed + 100),
      );
      expect(pacing.state().requestsPerSecond).toBe(50);
    },
    60_000,
  );
});

describe("callsPerBatch()", () => {
  test("a batch carries at most a second of the rate's calls", () => {
    expect(callsPerBatch(Number.POSITIVE_INFINITY, 500)).toBe(500);
    expect(callsPerBatch(10, 500)).toBe(10);
    expect(callsPerBatch(50, 20)).toBe(20);
    expect(callsPerBatch(4.75, 500)).toBe(4);
    expect(callsPerBatch(0.2, 500)).toBe(1);
  });
});

describe("binomialTail()", () => {
  test("is the chance of k or more refusals among n calls refused at random", () => {
    expect(binomialTail(0, 10, 0.05)).toBe(1);
    expect(binomialTail(11, 10, 0.05)).toBe(0);
    expect(binomialTail(1, 10, 0.05)).toBeCloseTo(1 - 0.95 ** 10, 12);
    expect(binomialTail(10, 10, 0.05)).toBeCloseTo(0.05 ** 10, 20);
    // Large windows stay cheap and finite.
    expect(binomialTail(600, 10_000, 0.05)).toBeGreaterThan(0);
    expect(binomialTail(600, 10_000, 0.05)).toBeLessThan(1e-3);
    expect(binomialTail(500, 10_000, 0.05)).toBeGreaterThan(0.4);
  });
});
