import { ShutdownError } from "../errors/base.js";
import { createSendLog } from "./sendLog.js";

/**
 * Share of the last refused rate that the rate climbs back to quickly after a halving; past it the
 * climb is slow, so the client settles just under the provider's limit instead of bouncing off it.
 */
const QUICK_RECOVERY_SHARE = 0.9;
/** Rate regained per second of traffic below QUICK_RECOVERY_SHARE of the refused rate, as a share of it: half to 90% in about 1.6 s. */
const QUICK_RECOVERY_PER_SECOND = 0.25;
/**
 * ...and above it: from just under a limit the provider showed to past it in about half a minute,
 * so at a steady provider limit about one request in 150 (at 5 calls a second) is refused.
 */
const SLOW_RECOVERY_PER_SECOND = 0.001;
/**
 * Least time between two cuts (ms). Providers count requests over a second: a refusal in the
 * second after a cut may still be the old rate's, even for a request sent after the cut.
 */
const MIN_MS_BETWEEN_CUTS = 1_000;
/** The rate never falls below this (requests per second): a rate limit slows the client, it never stops it. */
export const MIN_REQUESTS_PER_SECOND = 0.2;
/** The span (ms) over which providers count requests, and over which the calls they accepted show their limit. */
const PROVIDER_SECOND_MS = 1_000;
/**
 * How much later or earlier than its neighbours a request may reach the provider than it left
 * (ms): a loaded event loop on either side. Pacing at a limit the provider showed keeps this much
 * above its second, so the request that would make one too many arrives after the first has left
 * its count. It is where the margin starts: a refusal at the limit the provider showed doubles it.
 */
export const ARRIVAL_JITTER_MS = 50;
/** The margin stops doubling here: the rate is then half the limit the provider showed. */
const MAX_ARRIVAL_JITTER_MS = PROVIDER_SECOND_MS;
/**
 * Requests in flight at the start: the limit grows by one every round trip while requests wait,
 * until a provider refuses. By one, not doubling (TCP's slow start): the requests let go before a
 * first refusal is read are refused too, and every other refusal may carry a Retry-After second.
 */
export const INITIAL_CONCURRENCY = 1;

export type RateLimiterOptions = {
  /**
   * The configured ceiling (rpc.requestsPerSecond); the rate starts there. Infinity: no ceiling, so
   * nothing is paced until a provider refuses, and then the rate follows what it accepted.
   */
  requestsPerSecond: number;
  /** Most requests in flight at once. */
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
   * Runs `task` once a request slot is free and `cost` more calls fit the rate (a JSON-RPC batch
   * costs one per call, as hosted providers bill it); `task` gets the time it was let go (ms).
   */
  run: <T>(cost: number, task: (sentAt: number) => Promise<T>) => Promise<T>;
  /**
   * A request sent at `sentAt` was refused for its rate. The first time, the rate falls to what the
   * provider showed it accepts (the calls sent in the second before it and not refused) less a
   * margin for arrival jitter: a measurement, not a guess. Refused again at or under that rate with
   * as many calls in its second (one fewer: the provider's second held one the client's did not),
   * the margin doubles; with fewer, the rate halves. The concurrency halves with either, at most
   * once a second; refusals of requests sent before the last cut only correct its measurement.
   * With `retryAfterMs` no request leaves before that wait is over. A batch of `cost` calls, more
   * than the provider showed it accepts, was refused for its size, which says nothing of the rate:
   * the caller sends it in pieces and the limits stay. Returns whether the limits were cut.
   */
  refused: (sentAt: number, retryAfterMs: number | undefined, cost?: number) => boolean;
  /**
   * A request of `cost` calls let go at `sentAt` left at `leftAt` (ms, the same clock), later: it
   * was sent from another thread, busy meanwhile. The pacing counts it from then; a refusal of it
   * is reported with `leftAt`.
   */
  left: (sentAt: number, leftAt: number, cost: number) => void;
  /** A request of `cost` calls, let go at `sentAt`, was answered: the limits climb back (additive increase). */
  answered: (cost: number, sentAt: number) => void;
  state: () => RateLimiterState;
};

/**
 * Calls to put in one batch at `requestsPerSecond`, at most `most`: no more than the rate's whole
 * calls, and a size that fills the pacing's span (⌈rate⌉ calls) exactly. Batches of 4 under a rate
 * of 4.76 fit one to a 5-call span, so a fifth of the rate went unused; batches of 1 use all of it.
 */
export function callsPerBatch(requestsPerSecond: number, most: number): number {
  let size = Math.max(1, Math.min(most, Math.floor(requestsPerSecond)));
  if (requestsPerSecond === Number.POSITIVE_INFINITY) return size;
  const span = Math.max(1, Math.ceil(requestsPerSecond));
  while (span % size !== 0) size--;
  return size;
}

/**
 * The client's request pacing, AIMD on a rate and on the requests in flight. Calls are paced as
 * providers count them, over a sliding second (at most ⌈rate⌉ calls in any ⌈rate⌉/rate seconds), so
 * a burst the provider already counted delays the next calls instead of being refused. Without a
 * ceiling nothing is paced until the first refusal (a node on the same host or a paid plan is not
 * held to a guess), and the requests in flight start at one and grow by one every round trip, so
 * the first refusal finds few requests behind it. A `Retry-After` pauses every request, not only the refused one.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const maxRate = options.requestsPerSecond;
  const maxConcurrency = options.concurrency;
  const clock = options.now ?? (() => performance.now());
  let rate = maxRate;
  let concurrency = Math.min(maxConcurrency, INITIAL_CONCURRENCY);
  /** The limit the provider showed at the last refusal (calls per second). */
  let refusedRate = Number.POSITIVE_INFINITY;
  /** The margin kept over the provider's second at that limit (ms). */
  let marginMs = ARRIVAL_JITTER_MS;
  let pausedUntil = 0;
  let lastCutAt = Number.NEGATIVE_INFINITY;
  let inFlight = 0;
  /** When the requests in flight last grew before a refusal: answers to requests sent earlier do not grow them again. */
  let grewAt = Number.NEGATIVE_INFINITY;
  const sends = createSendLog();
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

  /** Just under a limit the provider showed: its second plus the margin. */
  const underShown = (limit: number) => (limit * PROVIDER_SECOND_MS) / (PROVIDER_SECOND_MS + marginMs);

  /** When `cost` more calls fit: at most ⌈rate⌉ calls in any span of ⌈rate⌉/rate seconds. */
  function sendableAt(cost: number, now: number): number {
    if (rate === Number.POSITIVE_INFINITY) return now;
    const calls = Math.max(1, Math.ceil(rate));
    // A batch larger than the span holds goes when the span is empty, and the span stays full until it leaves it.
    return sends.fitsAt(Math.min(cost, calls), calls, (calls * 1_000) / rate, now);
  }

  /** Lets go every waiting request the limits allow, in order; sets a timer for the next one. */
  function pump(): void {
    clearTimeout(timer);
    timer = undefined;
    const now = clock();
    sends.forgetBefore(now - Math.max(PROVIDER_SECOND_MS, 1_000 / MIN_REQUESTS_PER_SECOND) * 2);
    while (waiting.length > 0 && inFlight < Math.floor(concurrency)) {
      if (now < pausedUntil) return wakeIn(pausedUntil - now);
      const next = waiting[0]!;
      const at = sendableAt(next.cost, now);
      if (at > now) return wakeIn(at - now);
      sends.add(now, next.cost);
      inFlight++;
      waiting.shift();
      next.go(now);
    }
  }

  function wakeIn(ms: number): void {
    timer = setTimeout(pump, Math.max(1, Math.ceil(ms)));
  }

  /** Calls sent in the provider's second up to `sentAt` and not refused: its count when it refused a request sent then. */
  const shownAt = (sentAt: number) => sends.acceptedIn(sentAt - PROVIDER_SECOND_MS, sentAt);

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
      sends.markRefused(sentAt, cost);
      const shown = shownAt(sentAt);
      const tooBig = cost > 1 && cost > shown;
      if (tooBig) return pump(), false;
      if (sentAt < lastCutAt) {
        // Left before the last cut: the same burst. A smaller count in its second is the better measurement.
        if (shown > 0 && shown < refusedRate) {
          refusedRate = shown;
          rate = Math.max(MIN_REQUESTS_PER_SECOND, Math.min(rate, underShown(shown)));
        }
        return pump(), false;
      }
      if (now - lastCutAt < MIN_MS_BETWEEN_CUTS) return pump(), false;
      // Refused at or under a limit the provider showed before.
      const repeated = refusedRate !== Number.POSITIVE_INFINITY && rate <= refusedRate;
      if (repeated && shown > 0 && shown >= refusedRate - 1 && marginMs < MAX_ARRIVAL_JITTER_MS) {
        // Refused where it refused before (one call short of it in the client's second): the limit
        // holds and the requests reached it closer together than they left. The margin doubles.
        marginMs = Math.min(MAX_ARRIVAL_JITTER_MS, marginMs * 2);
        rate = Math.max(MIN_REQUESTS_PER_SECOND, Math.min(rate, underShown(refusedRate)));
      } else {
        // Otherwise that measurement does not hold (the provider counts otherwise), so halve.
        // Nothing sent and accepted in its second (the first answer was a refusal) shows nothing:
        // the old rate halves or, with no rate yet, the concurrency stands in for it.
        const limit = shown > 0 ? Math.min(rate, shown) : rate === Number.POSITIVE_INFINITY ? Math.floor(concurrency) : rate;
        refusedRate = Math.max(MIN_REQUESTS_PER_SECOND, limit);
        rate = Math.max(MIN_REQUESTS_PER_SECOND, shown > 0 && !repeated ? underShown(limit) : limit / 2);
      }
      concurrency = Math.max(1, concurrency / 2);
      lastCutAt = now;
      pump();
      return true;
    },

    left(sentAt, leftAt, cost) {
      if (leftAt > sentAt) sends.moved(sentAt, leftAt, cost);
    },

    answered(cost, sentAt) {
      // Before the first refusal: one more request in flight per round trip while requests wait for a slot.
      if (refusedRate === Number.POSITIVE_INFINITY) {
        if (waiting.length > 0 && sentAt >= grewAt) {
          concurrency = Math.min(maxConcurrency, concurrency + 1);
          grewAt = clock();
        }
      } else concurrency = Math.min(maxConcurrency, concurrency + 1 / concurrency);
      if (rate === Number.POSITIVE_INFINITY) return;
      const share = rate < refusedRate * QUICK_RECOVERY_SHARE ? QUICK_RECOVERY_PER_SECOND : SLOW_RECOVERY_PER_SECOND;
      // Per call answered, 1/rate of a second's climb: a second of traffic at this rate climbs one
      // second's worth. Past the refused rate the climb grows with the rate, so a limit shown too low
      // is outgrown in minutes, not hours.
      const step = Math.max(Math.min(refusedRate, maxRate), rate) * share;
      rate = Math.min(maxRate, rate + (cost * step) / rate);
    },

    state: () => ({ requestsPerSecond: rate, concurrency: Math.floor(concurrency), pausedUntil, refusedBefore: refusedRate !== Number.POSITIVE_INFINITY }),
  };
}
