import { ShutdownError } from "../errors/base.js";

/**
 * Share of the last refused rate that the rate climbs back to quickly after a refusal; past it the
 * climb is slow, so the client settles just under the provider's limit instead of bouncing off it.
 */
const QUICK_RECOVERY_SHARE = 0.9;
/** Rate regained per second of traffic below QUICK_RECOVERY_SHARE of the refused rate, as a share of it: half to 90% in about 1.6 s. */
const QUICK_RECOVERY_PER_SECOND = 0.25;
/** ...and above it: 90% to 100% in about 20 s, so at a steady provider limit about one request in 100 is refused. */
const SLOW_RECOVERY_PER_SECOND = 0.005;
/**
 * Least time between two cuts (ms). Providers count requests over a second: a refusal in the
 * second after a cut may still be the old rate's, even for a request sent after the cut.
 */
const MIN_MS_BETWEEN_CUTS = 1_000;
/** The rate never falls below this (requests per second): a rate limit slows the client, it never stops it. */
export const MIN_REQUESTS_PER_SECOND = 0.2;
/** The span (ms) over which the calls a provider accepted show its limit: providers count per second. */
const SHOWN_RATE_SPAN_MS = 1_000;
/** Answers kept to show a rate (ms): a second, plus the longest a refusal may take to come back. */
const ANSWERS_KEPT_MS = 10_000;
/** Requests let go this soon (ms) after a refused one left in the same burst: the provider counted them in its window too. */
const SAME_BURST_MS = 100;

export type RateLimiterOptions = {
  /**
   * The configured ceiling (rpc.requestsPerSecond); the rate starts there. Infinity: no ceiling, so
   * nothing is paced until a provider refuses, and then the rate follows what it accepted.
   */
  requestsPerSecond: number;
  /** Most requests in flight at once; the limit starts there. */
  concurrency: number;
  /** Rejects every waiting request with ShutdownError when it aborts. */
  signal: AbortSignal;
  /** The clock (ms, monotonic): performance.now unless a test drives it. */
  now?: () => number;
};

/**
 * Where the limiter stands: the current rate (Infinity while nothing paces) and concurrency limits,
 * the end of a `Retry-After` pause (performance.now() ms), and whether a provider has refused a
 * request for its rate since the limiter started (a provider that did will again).
 */
export type RateLimiterState = { requestsPerSecond: number; concurrency: number; pausedUntil: number; refusedBefore: boolean };

export type RateLimiter = {
  /**
   * Runs `task` once a request slot and `cost` tokens are free (a JSON-RPC batch costs one per call,
   * as hosted providers bill it); `task` gets the time it was let go (performance.now() ms).
   */
  run: <T>(cost: number, task: (sentAt: number) => Promise<T>) => Promise<T>;
  /**
   * A request sent at `sentAt` was refused for its rate: the rate falls to half of what the provider
   * showed it accepts (the calls answered that left in the last second, or the current rate if lower)
   * and the concurrency halves, once per round trip and at most once a second (refusals of requests
   * sent before the last cut, or within a second of it, do not cut again); with `retryAfterMs` no
   * request leaves before that wait is over. A batch of `cost` calls, more than the provider showed
   * it accepts, was refused for its size, which says nothing of the rate: the caller sends it in
   * pieces and the limits stay. Returns whether the limits were cut.
   */
  refused: (sentAt: number, retryAfterMs: number | undefined, cost?: number) => boolean;
  /** A request of `cost` calls, let go at `sentAt`, was answered: the limits climb back (additive increase). */
  answered: (cost: number, sentAt: number) => void;
  state: () => RateLimiterState;
};

/**
 * The client's request pacing: a token bucket (one second of burst) whose rate, and a limit on the
 * requests in flight, follow AIMD: halved on a provider's refusal, raised a little on every answer,
 * never above the configured ceiling. A `Retry-After` pauses every request, not only the refused one.
 * Without a ceiling nothing is paced until the first refusal: a node on the same host or a paid plan
 * is not held to a guess, and a limited provider shows its limit in the calls it accepted before refusing.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const maxRate = options.requestsPerSecond;
  const maxConcurrency = options.concurrency;
  const clock = options.now ?? (() => performance.now());
  let rate = maxRate;
  let concurrency = maxConcurrency;
  /** The rate at the last refusal: the limit the provider showed. */
  let refusedRate = Number.POSITIVE_INFINITY;
  let tokens = Math.max(1, rate);
  let refilledAt = clock();
  let pausedUntil = 0;
  let lastCutAt = Number.NEGATIVE_INFINITY;
  /** When the request behind the last cut left: answers to requests of its second still show the provider's limit. */
  let lastCutFor = Number.NEGATIVE_INFINITY;
  let inFlight = 0;
  /** Requests answered, by the time they left ([sentAt, cost]); those before `acceptedFrom` are forgotten. */
  const accepted: Array<[number, number]> = [];
  let acceptedFrom = 0;
  const waiting: Array<{ cost: number; go: (sentAt: number) => void; fail: (error: Error) => void }> = [];
  let timer: NodeJS.Timeout | undefined;

  options.signal.addEventListener(
    "abort",
    () => {
      clearTimeout(timer);
      for (const request of waiting.splice(0)) request.fail(new ShutdownError());
    },
    { once: true },
  );

  const capacity = () => Math.max(1, rate);

  function refill(now: number): void {
    tokens = rate === Number.POSITIVE_INFINITY ? rate : Math.min(capacity(), tokens + ((now - refilledAt) * rate) / 1_000);
    refilledAt = now;
  }

  /**
   * The calls a provider accepted that left in the second before `sentAt`: its count for the window
   * a request sent then overflowed, so the rate it showed it allows. Requests sent earlier have
   * mostly been answered by the time that request's refusal is read, which the last second before
   * the refusal would not have been.
   */
  function shownRate(sentAt: number): number {
    let calls = 0;
    for (let i = acceptedFrom; i < accepted.length; i++) {
      const [at, cost] = accepted[i]!;
      if (inShownSpan(at, sentAt)) calls += cost;
    }
    return calls;
  }

  const inShownSpan = (at: number, refusedSentAt: number) => at > refusedSentAt - SHOWN_RATE_SPAN_MS && at <= refusedSentAt + SAME_BURST_MS;

  /** Forgets answers too old to show a rate for any request still in flight. */
  function forgetOldAnswers(now: number): void {
    while (acceptedFrom < accepted.length && accepted[acceptedFrom]![0] < now - ANSWERS_KEPT_MS) acceptedFrom++;
    if (acceptedFrom > 1_024 && acceptedFrom * 2 > accepted.length) accepted.splice(0, acceptedFrom), (acceptedFrom = 0);
  }

  /**
   * The rate a refusal of a request sent at `sentAt` shows: what was accepted in the second before
   * it, or the current rate if lower. Nothing accepted (the first answer was a refusal) shows
   * nothing: the old rate halves, or with no rate yet, the concurrency stands in for it.
   */
  function refusedAt(sentAt: number): number {
    const shown = shownRate(sentAt);
    if (shown > 0) return Math.min(rate, shown);
    return rate === Number.POSITIVE_INFINITY ? Math.floor(concurrency) : rate;
  }

  /** Lets go every waiting request the limits allow, in order; sets a timer for the next one. */
  function pump(): void {
    clearTimeout(timer);
    timer = undefined;
    const now = clock();
    refill(now);
    while (waiting.length > 0 && inFlight < Math.floor(concurrency)) {
      if (now < pausedUntil) return wakeIn(pausedUntil - now);
      const next = waiting[0]!;
      // A batch larger than the bucket goes when the bucket is full, and its debt is paid before the next request.
      const needed = Math.min(next.cost, capacity());
      if (tokens < needed) return wakeIn(((needed - tokens) * 1_000) / rate);
      tokens -= next.cost;
      inFlight++;
      waiting.shift();
      next.go(now);
    }
  }

  function wakeIn(ms: number): void {
    timer = setTimeout(pump, Math.max(1, Math.ceil(ms)));
  }

  return {
    async run(cost, task) {
      if (options.signal.aborted) throw new ShutdownError();
      const sentAt = await new Promise<number>((go, fail) => {
        waiting.push({ cost, go, fail });
        pump();
      });
      try {
        return await task(sentAt);
      } finally {
        inFlight--;
        pump();
      }
    },

    refused(sentAt, retryAfterMs, cost = 1) {
      const now = clock();
      if (retryAfterMs !== undefined) pausedUntil = Math.max(pausedUntil, now + retryAfterMs);
      const tooBig = cost > 1 && cost > shownRate(sentAt);
      const cut = !tooBig && sentAt >= lastCutAt && now - lastCutAt >= MIN_MS_BETWEEN_CUTS;
      if (cut) {
        lastCutAt = now;
        lastCutFor = sentAt;
        refusedRate = Math.max(MIN_REQUESTS_PER_SECOND, refusedAt(sentAt));
        rate = Math.max(MIN_REQUESTS_PER_SECOND, refusedRate / 2);
        concurrency = Math.max(1, concurrency / 2);
        // The burst the bucket held is what the provider just refused.
        tokens = Math.min(tokens, 0);
        refilledAt = now;
      }
      pump();
      return cut;
    },

    answered(cost, sentAt) {
      accepted.push([sentAt, cost]);
      forgetOldAnswers(clock());
      concurrency = Math.min(maxConcurrency, concurrency + 1 / concurrency);
      if (rate === Number.POSITIVE_INFINITY) return;
      // Requests still in flight when the refusal came back, accepted in its second: the provider
      // allows more than the cut assumed.
      if (inShownSpan(sentAt, lastCutFor)) {
        const shown = shownRate(lastCutFor);
        if (shown > refusedRate) {
          refusedRate = Math.min(maxRate, shown);
          rate = Math.max(rate, refusedRate / 2);
        }
      }
      const share = rate < refusedRate * QUICK_RECOVERY_SHARE ? QUICK_RECOVERY_PER_SECOND : SLOW_RECOVERY_PER_SECOND;
      // Per call answered, 1/rate of a second's climb: a second of traffic at this rate climbs one
      // second's worth. Past the refused rate the climb grows with the rate, so a limit shown too low
      // (calls still in flight when the refusal came) is outgrown in minutes, not hours.
      const step = Math.max(Math.min(refusedRate, maxRate), rate) * share;
      rate = Math.min(maxRate, rate + (cost * step) / rate);
    },

    state: () => ({ requestsPerSecond: rate, concurrency: Math.floor(concurrency), pausedUntil, refusedBefore: refusedRate !== Number.POSITIVE_INFINITY }),
  };
}
