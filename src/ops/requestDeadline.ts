/**
 * One outgoing request's abort signal: it fires after `timeoutMs` or when `signal` (a shutdown)
 * fires, whichever comes first. Call `dispose` when the request ends, so no timer and no listener
 * on the long-lived signal outlive it.
 *
 * Note: not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`. In Node (nodejs/node#57736) the
 * timeout signal inside a composite can be garbage-collected before it fires; the request then
 * never times out. A webhook receiver that hung while a GC ran stalled its subscription for good.
 * Here the timer's closure holds the controller, so the deadline always fires.
 */
export type RequestDeadline = {
  signal: AbortSignal;
  /** Whether the request was aborted by the deadline (not by the other signal). */
  timedOut: () => boolean;
  dispose: () => void;
};

export function requestDeadline(timeoutMs: number, signal?: AbortSignal): RequestDeadline {
  const controller = new AbortController();
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, "TimeoutError"));
  }, timeoutMs);
  const onAbort = () => controller.abort(signal!.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => fired,
    dispose: () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    },
  };
}
