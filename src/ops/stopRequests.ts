/**
 * The same signal arriving this soon after the first is a copy of the same stop request, not a
 * second one. A terminal's Ctrl-C and `kill -- -PGID` (systemd's default KillMode=control-group)
 * signal every process of the group, so under `npm start` the daemon gets the signal once from the
 * kernel and once more from npm, which forwards its own copy to its child a few milliseconds later.
 */
export const REPEAT_WINDOW_MS = 1_000;

/** What a received signal asks for: the first stop, a copy of it (ignored), or a deliberate second one (force). */
export type StopRequest = "stop" | "copy" | "force";

export type StopRequests = {
  /** Classifies `signal` received at `nowMs` (a monotonic clock, milliseconds). */
  classify: (signal: NodeJS.Signals, nowMs: number) => StopRequest;
};

/**
 * Counts stop requests rather than signals: a second request forces the exit only when it is
 * deliberate, i.e. another signal, or the same one after `windowMs` from the first.
 */
export function createStopRequests(windowMs: number = REPEAT_WINDOW_MS): StopRequests {
  let first: { signal: NodeJS.Signals; atMs: number } | undefined;
  return {
    classify(signal, nowMs) {
      if (first === undefined) {
        first = { signal, atMs: nowMs };
        return "stop";
      }
      return signal === first.signal && nowMs - first.atMs < windowMs ? "copy" : "force";
    },
  };
}
