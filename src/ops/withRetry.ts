import { RetryableError, walkCauses } from "../errors/base.js";
import { sleep } from "./shutdown.js";

/** What a policy sees of a failure: `count` is the failed attempt's index (0 for the first). */
export type RetryFailure = { count: number; error: unknown };

/**
 * How `withRetry` retries, as arguments (the shape of viem's `withRetry`): the delay before the next
 * attempt, how many retries at most, and which errors are worth one.
 */
export type RetryPolicy = {
  /** ms before the next attempt; a wait the error itself names (HTTP `Retry-After`) takes precedence. Default 0. */
  delay?: number | ((failure: RetryFailure) => number);
  /** Retries after the first attempt; `Infinity` retries until `shouldRetry` says no or `signal` aborts. Default 2. */
  retryCount?: number;
  /** Whether this failure is worth another attempt. Default: every error. */
  shouldRetry?: (failure: RetryFailure) => boolean;
  /** Told before each wait (to log it, count it); not told when the last failure is thrown. */
  onRetry?: (failure: RetryFailure & { delayMs: number }) => void;
  /** Aborts a wait with ShutdownError: a shutdown never waits out a backoff. */
  signal?: AbortSignal;
};

/**
 * Runs `fn` until it succeeds, `shouldRetry` refuses a failure, or `retryCount` retries are spent;
 * then throws the last failure as it was. `fn` gets the attempt's index (0 for the first), e.g. to
 * rotate endpoints. The one retry loop of flashindex: every caller passes its policy.
 */
export async function withRetry<T>(
  fn: (attempt: { count: number }) => Promise<T>,
  policy: RetryPolicy = {},
): Promise<T> {
  const { retryCount = 2, shouldRetry = () => true } = policy;
  for (let count = 0; ; count++) {
    try {
      return await fn({ count });
    } catch (error) {
      if (count >= retryCount || policy.signal?.aborted || !shouldRetry({ count, error }))
        throw error;
      const delayMs =
        retryAfterOf(error) ??
        (typeof policy.delay === "function" ? policy.delay({ count, error }) : (policy.delay ?? 0));
      policy.onRetry?.({ count, error, delayMs });
      await sleep(delayMs, policy.signal);
    }
  }
}

/** Exponential backoff: the first retry waits up to `initialDelayMs`, each next one twice as long, never over `maxDelayMs`. */
export type Backoff = { initialDelayMs: number; maxDelayMs: number };

/**
 * The delay (ms) before retry `count` (0 for the first), with full jitter: uniform in
 * [0, min(maxDelayMs, initialDelayMs × 2^count)], so clients that failed together do not retry together.
 * The one backoff of flashindex: RPC retries, WebSocket reconnects, registration and webhook retries use it.
 */
export function backoffDelayMs(count: number, backoff: Backoff): number {
  return Math.round(
    Math.random() * Math.min(backoff.maxDelayMs, backoff.initialDelayMs * 2 ** count),
  );
}

/** `backoffDelayMs` as a policy's `delay`. */
export const exponentialBackoff =
  (backoff: Backoff) =>
  ({ count }: RetryFailure): number =>
    backoffDelayMs(count, backoff);

/** The wait (ms) a failure names: the `Retry-After` an HTTP answer carried, found anywhere along its causes. */
export function retryAfterOf(error: unknown): number | undefined {
  const named = (e: Error): e is RetryableError =>
    e instanceof RetryableError && e.retryAfterMs !== undefined;
  return walkCauses(error, named)?.retryAfterMs;
}

/**
 * Longest `Retry-After` honoured: a server asking for more is asked again after this long (a
 * misconfigured or hostile header must not park the daemon for days).
 */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * An HTTP `Retry-After` header's wait in ms (RFC 9110 §10.2.3: delay-seconds, or an HTTP date
 * measured from `nowMs`), at most MAX_RETRY_AFTER_MS; undefined when absent or unreadable.
 */
export function parseRetryAfterMs(
  header: string | readonly string[] | undefined,
  nowMs = Date.now(),
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^\d+$/.test(value)) return Math.min(MAX_RETRY_AFTER_MS, Number(value) * 1_000);
  // Only an IMF-fixdate-like value with a weekday or a month name is a date; `Date.parse` would read "1.5" as a year.
  if (!/[a-z]{3}/i.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - nowMs));
}
