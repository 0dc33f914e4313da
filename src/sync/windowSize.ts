/** Successful windows in a row before the window grows back after a provider range error. */
export const GROW_AFTER_SUCCESSES = 8;

/**
 * The adaptive eth_getLogs window: shrinks to what a provider accepted after a range error,
 * doubles back toward the configured size after a run of successes.
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
    recordSuccess(): void {
      if (current >= configured || ++successes < GROW_AFTER_SUCCESSES) return;
      current = Math.min(configured, current * 2);
      successes = 0;
    },
  };
}

export type WindowSize = ReturnType<typeof createWindowSize>;
