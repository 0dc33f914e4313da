/** A head older than this makes the daemon not ready (Base makes a block every 2 s). */
export const HEAD_STALE_AFTER_MS = 60_000;

/** What /readyz reports on: set by the sync loops, read by the HTTP server. */
export function createHealth(now: () => number = Date.now) {
  let backfillCaughtUp = false;
  let lastHeadAt = 0;
  /** Why pre-confirmed data is not trusted now, or undefined. */
  let preconfirmedViewProblem: string | undefined;
  return {
    /** Set by the pending view's watchdog: undefined when the view is trusted, else why not. */
    markPreconfirmedView: (problem: string | undefined) => {
      preconfirmedViewProblem = problem;
    },
    /**
     * What works but less well than it should, for /healthz: the daemon stays ready (canonical blocks
     * are indexed), yet an operator must see it.
     */
    degradedReasons(): string[] {
      return preconfirmedViewProblem === undefined
        ? []
        : [`pre-confirmed view not trusted: ${preconfirmedViewProblem}`];
    },
    markBackfillCaughtUp: (caughtUp: boolean) => {
      backfillCaughtUp = caughtUp;
    },
    markHeadSeen: () => {
      lastHeadAt = now();
    },
    /** True once the backfill has reached the chain's finalized block (the daemon follows the head). */
    isCaughtUp: () => backfillCaughtUp,
    /** undefined when ready, else the reason it is not. */
    notReadyReason(): string | undefined {
      if (!backfillCaughtUp) return "backfill has not caught up with the finalized block";
      if (now() - lastHeadAt > HEAD_STALE_AFTER_MS)
        return `no new head for over ${HEAD_STALE_AFTER_MS / 1_000} s`;
      return undefined;
    },
  };
}

export type Health = ReturnType<typeof createHealth>;
