/** Successful windows in a row before the window grows back after a provider range error. */
export const GROW_AFTER_SUCCESSES = 8;
/** Logs one window should bring at most: bounds memory (windows in flight × logs) on dense ranges. */
export const TARGET_LOGS_PER_WINDOW = 5_000;

/**
 * The adaptive eth_getLogs window: shrinks to what a provider accepted after a range error, or
 * when windows bring too many logs; doubles back toward the configured size after a run of successes.
 */
export function createWindowSize(configured: number) {
  let current = configured;
  let successes = 0;
  return {
    current: () => current,
    shrinkTo(blocks: number): void {
      current = Math.max(1, Math.min(current, blocks));
      successes = 0;
    },
    /** After a window of `blocks` blocks brought `logs` logs: dense ranges shrink the window, sparse ones let it grow back. */
    recordSuccess(blocks: number, logs: number): void {
      if (logs > TARGET_LOGS_PER_WINDOW) {
        current = Math.max(1, Math.min(current, Math.floor((blocks * TARGET_LOGS_PER_WINDOW) / logs)));
        successes = 0;
        return;
      }
      if (current >= configured || ++successes < GROW_AFTER_SUCCESSES) return;
      current = Math.min(configured, current * 2);
      successes = 0;
    },
  };
}

export type WindowSize = ReturnType<typeof createWindowSize>;
