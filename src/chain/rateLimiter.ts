import { ShutdownError } from "../errors/base.js";
import { createAdaptiveRate } from "./adaptiveRate.js";
import { createRequestPacer } from "./requestPacer.js";

export { MIN_REQUESTS_PER_SECOND } from "./adaptiveRate.js";

/**
 * Requests in flight at the start: the limit grows by one every round trip while requests wait,
 * until a provider refuses. By one, not doubling (TCP's slow start): the requests let go before a
 * first refusal is read are refused too.
 */
export const INITIAL_CONCURRENCY = 1;
/**
 * Requests in flight the head class may add to the limit: a head request never waits for a
 * background request to come back (Netflix concurrency-limits' partitioned limiter: a guaranteed
 * share per partition).
 */
export const HEAD_RESERVED_REQUESTS = 4;

/**
 * Head requests let go in a row while background ones wait, before one background request goes:
 * when both want more than the budget, the head gets four fifths of it and the background a fifth,
 * so work that can wait still catches up (a head polled every 200 ms against a provider allowing 4
 * calls a second would otherwise take all of it). A head request waits behind one background
 * request's pacing slot at most.
 */
export const HEAD_TURNS_PER_BACKGROUND = 4;

/**
 * Longest a request handed to another thread holds the paced ones after it back while that thread
 * has not said it left (ms): a notice that never comes must not stop the client.
 */
export const UNSENT_HOLD_MS = 1_000;

/**
 * Two classes over one budget. `head`: the confirmed head (new blocks, their logs, reorg walks),
 * settle and relay calls; priority and the larger guaranteed share. `background`: backfill
 * windows, pending-view polls, attribution; they borrow what the head leaves, with a fifth of the
 * budget guaranteed (HEAD_TURNS_PER_BACKGROUND).
 */
export type RequestPriority = "head" | "background";

export type RateLimiterOptions = {
  /**
   * The configured ceiling (rpc.requestsPerSecond); the rate starts there. Infinity: no ceiling, so
   * nothing is paced until a provider refuses, and then the rate follows what it accepted.
   */
  requestsPerSecond: number;
  /** Most requests in flight at once for the background class (the head may add HEAD_RESERVED_REQUESTS). */
  concurrency: number;
  /** Rejects every waiting request with ShutdownError when it aborts. */
  signal: AbortSignal;
  /** The clock (ms, monotonic): performance.now unless a test drives it. */
  now?: () => number;
};

/**
 * Where the limiter stands: the current rate (Infinity while nothing paces) and concurrency limits,
 * the end of a `Retry-After` pause (the limiter's clock, ms), the limit the provider showed (Infinity
 * before any) and whether the rate was cut for a provider's rate limit since the limiter started.
 */
export type RateLimiterState = {
  requestsPerSecond: number;
  concurrency: number;
  pausedUntil: number;
  ceiling: number;
  refusedBefore: boolean;
};

export type RateLimiter = {
  /**
   * Runs `task` once a request slot is free and `cost` more calls fit the rate (a JSON-RPC batch
   * costs one per call, as hosted providers bill it); `task` gets the time it was let go (ms).
   * Head requests go before background ones waiting, but for one in HEAD_TURNS_PER_BACKGROUND + 1.
   * `leavesLater`: `task` hands the request to another thread, which says when it left (`left`);
   * until then no paced request goes after it, or the two could leave together.
   */
  run: <T>(
    cost: number,
    task: (sentAt: number) => Promise<T>,
    priority?: RequestPriority,
    leavesLater?: boolean,
  ) => Promise<T>;
  /**
   * A request sent at `sentAt` was refused for its rate (adaptiveRate.ts decides whether that cuts
   * the rate). With `retryAfterMs` no request leaves before that wait is over. Returns whether the
   * rate was cut.
   */
  refused: (sentAt: number, retryAfterMs: number | undefined, cost?: number) => boolean;
  /**
   * A request of `cost` calls let go at `sentAt` left at `leftAt` (ms; later when another thread
   * sent it): the pacing counts it from then.
   */
  left: (sentAt: number, leftAt: number, cost: number) => void;
  /** A request of `cost` calls, let go at `sentAt`, was answered. */
  answered: (cost: number, sentAt: number) => void;
  state: () => RateLimiterState;
};

/** Calls to put in one batch at `requestsPerSecond`, at most `most`: no more than a second of the rate. */
export function callsPerBatch(requestsPerSecond: number, most: number): number {
  return Math.max(1, Math.min(most, Math.floor(requestsPerSecond)));
}

/**
 * The client's request scheduling: two priority classes (RequestPriority) over one rate and one
 * set of request slots. Calls are spread evenly at the rate (requestPacer.ts) and the rate adapts
 * to the provider (adaptiveRate.ts), from when each call left: a request another thread sends
 * holds the paced ones after it until it has left (its thread may be busy). Without a ceiling the
 * requests in flight start at one and grow by one every round trip, so the first refusal finds few
 * requests behind it. A `Retry-After` pauses every request, not only the refused one (the provider
 * asked the client to wait: RFC 6585 §4, "how long to wait before making a new request").
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const maxConcurrency = options.concurrency;
  const clock = options.now ?? (() => performance.now());
  const rate = createAdaptiveRate({ requestsPerSecond: options.requestsPerSecond, now: clock });
  const pacer = createRequestPacer();
  let concurrency = Math.min(maxConcurrency, INITIAL_CONCURRENCY);
  let pausedUntil = 0;
  let inFlight = 0;
  /** When the requests in flight last grew: answers to requests sent earlier do not grow them again. */
  let grewAt = Number.NEGATIVE_INFINITY;
  type Waiting = {
    cost: number;
    leavesLater: boolean;
    go: (sentAt: number) => void;
    fail: (error: Error) => void;
  };
  const waiting: Record<RequestPriority, Waiting[]> = { head: [], background: [] };
  let timer: NodeJS.Timeout | undefined;
  /** Head requests let go in a row while background ones waited. */
  let headTurns = 0;
  /** Requests let go to another thread that has not said they left: when, and their calls. */
  const unsent: Array<{ at: number; cost: number }> = [];
  /** Whether the pacing held the next request back since the last left: the rate is the limit. */
  let heldByPacing = false;

  options.signal.addEventListener(
    "abort",
    () => {
      clearTimeout(timer);
      for (const request of [...waiting.head.splice(0), ...waiting.background.splice(0)])
        request.fail(new ShutdownError());
    },
    { once: true },
  );

  /** Lets go every waiting request the limits allow, head first (HEAD_TURNS_PER_BACKGROUND); sets a timer for the next one. */
  function pump(): void {
    clearTimeout(timer);
    timer = undefined;
    const now = clock();
    for (;;) {
      const backgroundFits = waiting.background.length > 0 && inFlight < Math.floor(concurrency);
      const head =
        waiting.head.length > 0 && !(backgroundFits && headTurns >= HEAD_TURNS_PER_BACKGROUND);
      const queue = head ? waiting.head : waiting.background;
      if (queue.length === 0) return;
      if (inFlight >= Math.floor(concurrency) + (head ? HEAD_RESERVED_REQUESTS : 0)) return;
      if (now < pausedUntil) return wakeIn(pausedUntil - now);
      const next = queue[0]!;
      const current = rate.rate();
      // Paced, a call leaves only after the one handed to another thread did (its `left` pumps).
      const unsentUntil = current === Number.POSITIVE_INFINITY ? 0 : unsentHold(now);
      if (unsentUntil > now) return wakeIn(unsentUntil - now);
      const at = pacer.sendableAt(now, current);
      if (at > now) {
        heldByPacing = true;
        return wakeIn(at - now);
      }
      pacer.sent(now, next.cost, current);
      rate.sent(now, next.cost, heldByPacing);
      heldByPacing = false;
      inFlight++;
      queue.shift();
      headTurns = !head ? 0 : waiting.background.length > 0 ? headTurns + 1 : 0;
      if (next.leavesLater) unsent.push({ at: now, cost: next.cost });
      next.go(now);
    }
  }

  /** Until when requests not yet sent by another thread hold the next back (0: none do). */
  function unsentHold(now: number): number {
    while (unsent.length > 0 && unsent[0]!.at + UNSENT_HOLD_MS <= now) unsent.shift();
    return unsent.length === 0 ? 0 : unsent[0]!.at + UNSENT_HOLD_MS;
  }

  /** Forgets the request let go at `sentAt` as unsent; whether it was. */
  function sentNow(sentAt: number, cost: number): boolean {
    const i = unsent.findIndex((u) => u.at === sentAt && u.cost === cost);
    if (i !== -1) unsent.splice(i, 1);
    return i !== -1;
  }

  function wakeIn(ms: number): void {
    timer = setTimeout(pump, Math.max(1, Math.ceil(ms)));
  }

  const anyWaiting = () => waiting.head.length + waiting.background.length > 0;

  return {
    async run(cost, task, priority = "head", leavesLater = false) {
      if (options.signal.aborted) throw new ShutdownError();
      const sentAt = await new Promise<number>((go, fail) => {
        waiting[priority].push({ cost, leavesLater, go, fail });
        pump();
      });
      try {
        return await task(sentAt);
      } finally {
        inFlight--;
        // Never sent (held back, or failed before it left): it holds nothing back any more.
        if (leavesLater) sentNow(sentAt, cost);
        pump();
      }
    },

    refused(sentAt, retryAfterMs, cost = 1) {
      const now = clock();
      if (retryAfterMs !== undefined) pausedUntil = Math.max(pausedUntil, now + retryAfterMs);
      const cut = rate.refused(sentAt, cost);
      // The calls the provider already counted hold the next ones back, past the cut.
      if (cut) pausedUntil = Math.max(pausedUntil, rate.roomAt(now));
      pump();
      return cut;
    },

    left(sentAt, leftAt, cost) {
      const held = sentNow(sentAt, cost);
      if (leftAt > sentAt) {
        rate.moved(sentAt, leftAt, cost);
        pacer.left(leftAt, cost, rate.rate());
      }
      if (held || leftAt > sentAt) pump();
    },

    answered(cost, sentAt) {
      rate.answered(sentAt, cost);
      // Slow start: one more request in flight per round trip while requests wait for a slot.
      if (anyWaiting() && sentAt >= grewAt && concurrency < maxConcurrency) {
        concurrency++;
        grewAt = clock();
        pump();
      }
    },

    state: () => ({ ...rate.state(), concurrency: Math.floor(concurrency), pausedUntil }),
  };
}
