/**
 * How far ahead of its even spacing a call may leave (ms): room for a timer that fires late, so
 * the pacing does not lose what the event loop's lag would otherwise cost it, and no more. Note:
 * QuickNode refuses bursts of a few milliseconds under its per-second total, so calls are spread
 * out instead of sent a second's worth at once.
 */
export const PACING_SLACK_MS = 20;

/**
 * Even spacing of calls at a rate (the generic cell rate algorithm): every call books 1/rate s of
 * the budget after the last one booked, and leaves when its booking is due. A provider that counts
 * over 1 s, 5 s (Coinbase's node) or a rolling 10 s (Alchemy's compute units) sees the same steady
 * rate from it, never a burst the window happens to catch. A call that leaves later than it was
 * let go (another thread sent it) books from when it left, so the calls after it keep their
 * spacing from what the provider saw.
 */
export function createRequestPacer() {
  /** When the budget booked so far is spent (ms, the limiter's clock). */
  let bookedUntil = Number.NEGATIVE_INFINITY;
  return {
    /** When a call may leave at `rate` calls a second. */
    sendableAt(now: number, rate: number): number {
      if (rate === Number.POSITIVE_INFINITY) return now;
      return Math.max(now, bookedUntil - PACING_SLACK_MS);
    },
    /** A request of `cost` calls left at `now`: it books cost/rate seconds of the budget. */
    sent(now: number, cost: number, rate: number): void {
      if (rate === Number.POSITIVE_INFINITY) return void (bookedUntil = now);
      bookedUntil = Math.max(bookedUntil, now) + (cost * 1_000) / rate;
    },
    /** A request of `cost` calls let go earlier left at `leftAt`: the next is spaced from then. */
    left(leftAt: number, cost: number, rate: number): void {
      if (rate === Number.POSITIVE_INFINITY) return;
      bookedUntil = Math.max(bookedUntil, leftAt + (cost * 1_000) / rate);
    },
  };
}

export type RequestPacer = ReturnType<typeof createRequestPacer>;
