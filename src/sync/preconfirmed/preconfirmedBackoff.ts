import { retryAfterOf } from "../../ops/withRetry.js";

/** Longest pause between reads of a pre-confirmed view that keeps failing (Base makes a block every 2 s; a few blocks at most). */
export const PRECONFIRMED_BACKOFF_MAX_MS = 10_000;

/**
 * The pause before the next read of the pre-confirmed view after `failures` failed ones in a row (1 for
 * the first): the endpoint's Retry-After when it sent one, else doubling from the poll interval up to
 * PRECONFIRMED_BACKOFF_MAX_MS. Note: Base's public pre-confirmation endpoint is rate-limited; polling it
 * every 200 ms through a 429 only prolongs the limit. The pendingLogs subscription is not affected.
 */
export function preconfirmedReadDelayMs(
  failures: number,
  error: unknown,
  intervalMs: number,
): number {
  const retryAfterMs = retryAfterOf(error);
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, 60 * PRECONFIRMED_BACKOFF_MAX_MS);
  return Math.min(
    PRECONFIRMED_BACKOFF_MAX_MS,
    Math.max(intervalMs, 100) * 2 ** Math.min(failures, 16),
  );
}

/**
 * One pause shared by everything that reads the pre-confirmed view (the poll, the watchdog): after a
 * failure none of them asks again before `readyAt`.
 */
export function createPreconfirmedBackoff(intervalMs: number, now: () => number = Date.now) {
  let failures = 0;
  let readyAt = 0;
  /** Whether the endpoint itself set the pause (a Retry-After), rather than our own backoff. */
  let asked = false;
  return {
    /** Milliseconds to wait before the pre-confirmed view may be read again (0: now). */
    waitMs: () => Math.max(0, readyAt - now()),
    /** The part of the pause the endpoint asked for with Retry-After (0 when the pause is only ours). */
    askedWaitMs: () => (asked ? Math.max(0, readyAt - now()) : 0),
    failed(error: unknown): number {
      failures++;
      asked = retryAfterOf(error) !== undefined;
      const delay = preconfirmedReadDelayMs(failures, error, intervalMs);
      readyAt = now() + delay;
      return delay;
    },
    succeeded(): void {
      failures = 0;
      readyAt = 0;
      asked = false;
    },
  };
}

export type PreconfirmedBackoff = ReturnType<typeof createPreconfirmedBackoff>;
