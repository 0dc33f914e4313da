/** Exponential backoff: the first retry waits up to `initialDelayMs`, each next one twice as long, never over `maxDelayMs`. */
export type Backoff = { initialDelayMs: number; maxDelayMs: number };

/**
 * The delay (ms) before retry number `retry` (0 for the first), with full jitter: uniform in
 * [0, min(maxDelayMs, initialDelayMs × 2^retry)], so clients that failed together do not retry together.
 * The one backoff of flashindex: RPC retries, WebSocket reconnects and registration retries use it.
 */
export function backoffDelayMs(retry: number, backoff: Backoff): number {
  return Math.round(Math.random() * Math.min(backoff.maxDelayMs, backoff.initialDelayMs * 2 ** retry));
}
