import { setMaxListeners } from "node:events";
import { ShutdownError } from "../errors/base.js";

/**
 * Listeners the shutdown signal may hold before Node warns of a leak. Every request in flight, every
 * sleep and every waiting settle listens to it while it lasts (removing its listener when it ends),
 * so a busy daemon holds dozens at once, past Node's default of 10; a leak (a listener never
 * removed, one per request) still passes this bound within minutes and is warned of.
 */
export const SHUTDOWN_LISTENER_BOUND = 1_000;

export type Shutdown = {
  /** Aborted once shutdown starts: long waits and loops listen to it. */
  readonly signal: AbortSignal;
  readonly isKilled: () => boolean;
  /**
   * Registers a close, awaited when it returns a promise; closes run in reverse order of
   * registration (last opened, first closed).
   */
  add: (close: () => unknown) => void;
  /** Starts shutdown and runs every registered close once. */
  kill: () => Promise<void>;
  /** Throws ShutdownError when shutdown has started: call between units of work. */
  throwIfKilled: () => void;
};

/** Shutdown as a value: whoever opens a resource registers its close here. */
export function createShutdown(): Shutdown {
  const controller = new AbortController();
  setMaxListeners(SHUTDOWN_LISTENER_BOUND, controller.signal);
  const closes: Array<() => unknown> = [];
  let killing: Promise<void> | undefined;
  return {
    signal: controller.signal,
    isKilled: () => controller.signal.aborted,
    add: (close) => {
      closes.push(close);
    },
    kill: () => {
      killing ??= (async () => {
        controller.abort(new ShutdownError());
        for (const close of closes.reverse()) {
          try {
            await close();
          } catch {
            // A failing close must not keep the others from running.
          }
        }
      })();
      return killing;
    },
    throwIfKilled: () => {
      if (controller.signal.aborted) throw new ShutdownError();
    },
  };
}

/** Resolves after `ms`, or rejects with ShutdownError as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ShutdownError());
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ShutdownError());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
