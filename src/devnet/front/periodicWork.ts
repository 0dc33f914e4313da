/**
 * Work run every so many milliseconds, never overlapping itself (a run still going skips the next
 * tick); close() stops the timers and waits for the runs in flight instead of pulling anvil out
 * from under them.
 */
export function createPeriodicWork(reportError: (error: unknown) => void) {
  const timers: NodeJS.Timeout[] = [];
  const inFlight = new Set<Promise<unknown>>();
  return {
    /** Runs `work` every `ms` (0 or less: never). */
    every(ms: number, work: () => Promise<unknown>): void {
      if (ms <= 0) return;
      let busy = false;
      timers.push(
        setInterval(() => {
          if (busy) return;
          busy = true;
          const running = work()
            .catch(reportError)
            .finally(() => {
              busy = false;
              inFlight.delete(running);
            });
          inFlight.add(running);
        }, ms),
      );
    },
    async close(): Promise<void> {
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([...inFlight]);
    },
  };
}
