/** Successful windows in a row before the window grows back after a provider range error. */
export const GROW_AFTER_SUCCESSES = 8;
/**
 * Logs one window should bring at most. It bounds memory (windows in flight × logs) on dense
 * ranges, and the main thread's longest stretch without serving live writes (parsing, checking and
 * decoding one answer). Against 5,000 it halved the pre-confirmation p99 beside a backfill with
 * less memory and no loss of throughput; 1,000 cost Postgres a commit per window
 * (`target-logs-per-window` in scripts/bench/results/measurements.csv).
 */
export const TARGET_LOGS_PER_WINDOW = 2_000;
/**
 * The target while the provider limits the request rate: then requests, not memory or the main
 * thread, bound the backfill, and each answer should bring what a provider's usual result cap
 * (10,000 logs) allows. A provider with a lower cap refuses, and the window splits.
 */
export const RATE_LIMITED_TARGET_LOGS_PER_WINDOW = 10_000;
/**
 * Blocks of the first windows, before the density of the range is known: a 1,000-block window on a
 * chain with 500 logs a block would bring 500,000 logs (over 300 MB of JSON) in one answer, and
 * `backfill.concurrency` of them start at once.
 */
export const INITIAL_WINDOW_BLOCKS = 10;
/**
 * A window that brought at least this share of the target shows the range's density well enough
 * to size the next one from it at once; sparser ones only double the size (a few logs in a few
 * blocks predict little).
 */
export const DENSITY_KNOWN_SHARE = 0.1;
/**
 * A size read from a window that brought much less than the target aims this much under it:
 * densities vary from window to window (a range's first block may be its token's deployment, with
 * no logs), and an answer over a provider's result cap is refused whole.
 */
export const DENSITY_MARGIN = 0.05;

/**
 * The adaptive eth_getLogs window. It starts small and, while windows bring fewer logs than
 * `targetLogs()` (TARGET_LOGS_PER_WINDOW unless the caller says otherwise), grows toward the size
 * that density would allow (up to the configured size): at once when the last window showed the
 * density (DENSITY_KNOWN_SHARE), else at most doubling. It shrinks at once when a window brings too
 * many, and to what a provider accepted after a range error, growing back only after a run of
 * successes. A result cap the provider stated bounds the target from then on.
 */
export function createWindowSize(
  configured: number,
  targetLogs: () => number = () => TARGET_LOGS_PER_WINDOW,
) {
  let current = Math.min(configured, INITIAL_WINDOW_BLOCKS);
  // Set by a provider range error: from then on the window grows only after each run of successes.
  let rangeLimited = false;
  let successes = 0;
  // A block-range limit the provider stated: the window never grows past it again.
  let ceiling = configured;
  // A result cap the provider stated: no window aims past it again.
  let capLogs = Number.POSITIVE_INFINITY;
  return {
    current: () => current,
    /** After a provider refused an answer for holding more than `results` logs. */
    capResults(results: number): void {
      capLogs = Math.min(capLogs, Math.max(1, results));
      // Stated, the cap sizes windows from their density: no run of successes to wait for.
      rangeLimited = false;
      successes = 0;
    },
    /** After a range error: `blocks` is what the provider accepts; `stated` when it said so as a block count. */
    shrinkTo(blocks: number, stated = false): void {
      current = Math.max(1, Math.min(current, blocks));
      if (stated) ceiling = Math.min(ceiling, current);
      rangeLimited = true;
      successes = 0;
    },
    /** After a window of `blocks` blocks brought `logs` logs. */
    recordSuccess(blocks: number, logs: number): void {
      const target = Math.min(targetLogs(), capLogs);
      if (logs > target) {
        current = Math.max(1, Math.min(current, Math.floor((blocks * target) / logs)));
        return;
      }
      if (rangeLimited && ++successes < GROW_AFTER_SUCCESSES) return;
      successes = 0;
      // Blocks that would bring about the target at this window's density; an empty window allows any size.
      const fits = logs === 0 ? configured : Math.floor((blocks * target) / logs);
      // Within the margin of the target, the window's own density sizes the next one exactly.
      const next =
        logs >= target * (1 - DENSITY_MARGIN)
          ? fits
          : logs >= target * DENSITY_KNOWN_SHARE
            ? Math.floor(fits * (1 - DENSITY_MARGIN))
            : current * 2;
      current = Math.max(current, Math.min(ceiling, fits, next));
      if (current >= ceiling) rangeLimited = false;
    },
  };
}

export type WindowSize = ReturnType<typeof createWindowSize>;
