import { ShutdownError } from "../errors/base.js";

/**
 * Share of the last refused rate that the rate climbs back to quickly after a refusal; past it the
 * climb is slow, so the client settles just under the provider's limit instead of bouncing off it.
 */
const QUICK_RECOVERY_SHARE = 0.9;
/** Rate regained per second of traffic below QUICK_RECOVERY_SHARE of the refused rate, as a share of it: half to 90% in about 1.6 s. */
const QUICK_RECOVERY_PER_SECOND = 0.25;
/** ...and above it: 90% to 100% in about 10 s, so at a steady provider limit about one request in 50 is refused. */
const SLOW_RECOVERY_PER_SECOND = 0.01;
/**
 * Least time between two cuts (ms). Providers count requests over a second: a refusal in the
 * second after a cut may still be the old rate's, even for a request sent after the cut.
 */
const MIN_MS_BETWEEN_CUTS = 1_000;
/** The rate never falls below this (requests per second): a rate limit slows the client, it never stops it. */
export const MIN_REQUESTS_PER_SECOND = 0.2;

export type RateLimiterOptions = {
  /** The configured ceiling (rpc.requestsPerSecond); the rate starts there. */
  requestsPerSecond: number;
  /** Most requests in flight at once; the limit starts there. */
  concurrency: number;
  /** Rejects every waiting request with ShutdownError when it aborts. */
  signal: AbortSignal;
  /** The clock (ms, monotonic): performance.now unless a test drives it. */
  now?: () => number;
};

/** Where the limiter stands: the current rate and concurrency limits, and the end of a `Retry-After` pause (performance.now() ms). */
export type RateLimiterState = { requestsPerSecond: number; concurrency: number; pausedUntil: number };

export type RateLimiter = {
  /**
   * Runs `task` once a request slot and `cost` tokens are free (a JSON-RPC batch costs one per call,
   * as hosted providers bill it); `task` gets the time it was let go (performance.now() ms).
   */
  run: <T>(cost: number, task: (sentAt: number) => Promise<T>) => Promise<T>;
  /**
   * A request sent at `sentAt` was refused for its rate: rate and concurrency halve (once per round
   * trip and at most once a second: refusals of requests sent before the last cut, or within a
   * second of it, do not cut again), and with `retryAfterMs`
   * no request leaves before that wait is over. Returns whether the limits were cut.
   */
  refused: (sentAt: number, retryAfterMs: number | undefined) => boolean;
  /** A request of `cost` calls was answered: the limits climb back (additive increase). */
  answered: (cost: number) => void;
  state: () => RateLimiterState;
};

/**
 * The client's request pacing: a token bucket (one second of burst) whose rate, and a limit on the
 * requests in flight, follow AIMD: halved on a provider's refusal, raised a little on every answer,
 * never above the configured ceiling. A `Retry-After` pauses every request, not only the refused one.
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
  let inFlight = 0;
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
    tokens = Math.min(capacity(), tokens + ((now - refilledAt) * rate) / 1_000);
    refilledAt = now;
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

    refused(sentAt, retryAfterMs) {
      const now = clock();
      if (retryAfterMs !== undefined) pausedUntil = Math.max(pausedUntil, now + retryAfterMs);
      const cut = sentAt >= lastCutAt && now - lastCutAt >= MIN_MS_BETWEEN_CUTS;
      if (cut) {
        lastCutAt = now;
        refusedRate = rate;
        rate = Math.max(MIN_REQUESTS_PER_SECOND, rate / 2);
        concurrency = Math.max(1, concurrency / 2);
        // The burst the bucket held is what the provider just refused.
        tokens = Math.min(tokens, 0);
      }
      pump();
      return cut;
    },

    answered(cost) {
      const share = rate < refusedRate * QUICK_RECOVERY_SHARE ? QUICK_RECOVERY_PER_SECOND : SLOW_RECOVERY_PER_SECOND;
      // Per call answered, 1/rate of a second's climb: a second of traffic at this rate climbs one second's worth.
      const step = Math.min(refusedRate, maxRate) * share;
      rate = Math.min(maxRate, rate + (cost * step) / rate);
      concurrency = Math.min(maxConcurrency, concurrency + 1 / concurrency);
    },

    state: () => ({ requestsPerSecond: rate, concurrency: Math.floor(concurrency), pausedUntil }),
  };
}
