/**
 * Tells listeners in this process that a write transaction committed: the webhook sender wakes on
 * it instead of polling the outbox every few milliseconds (on Postgres each poll was a round trip).
 * Writes by other processes (`flashindex order void` beside the daemon) are found by its slower poll.
 */
export function createCommitSignal() {
  const listeners = new Set<() => void>();
  return {
    subscribe(listener: () => void): () => void {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    /** Runs every listener; one that throws does not stop the others or the write that committed. */
    notify(): void {
      for (const listener of listeners) {
        try {
          listener();
        } catch {
          // A listener's failure is its own: the transaction has committed.
        }
      }
    },
  };
}

export type CommitSignal = ReturnType<typeof createCommitSignal>;
