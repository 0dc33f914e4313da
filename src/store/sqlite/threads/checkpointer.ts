import { startThread } from "../../../ops/startThread.js";
import { CHECKPOINT_THREAD_HEAP_MB } from "../../../ops/threadSettings.js";

export type Checkpointer = {
  /** Asks for a checkpoint; requests made while one runs are folded into one more run after it. */
  nudge: () => void;
  /** Waits for the running checkpoint, then stops the thread. */
  close: () => Promise<void>;
};

/**
 * Copies the WAL back into the database on a thread of its own while the writers keep inserting
 * (the window writer's thread, the store's own connection: walCheckpoints.ts): a passive checkpoint
 * takes no write lock, and its page copies and fsyncs (a sixth of the writer thread's time when it
 * checkpointed itself) then overlap the inserts. `onFailure` runs if the thread dies before close.
 */
export function createCheckpointer(
  path: string,
  onFailure: () => void = () => undefined,
): Checkpointer {
  const worker = startThread(
    import.meta.url,
    "checkpointThread",
    { path },
    { maxOldGenerationSizeMb: CHECKPOINT_THREAD_HEAP_MB },
  );
  let running = false;
  let again = false;
  let idle: (() => void) | undefined;
  let closing: Promise<void> | undefined;
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      if (closing === undefined) onFailure();
      resolve();
    }),
  );
  // A failed checkpointer loses nothing: its owner checkpoints another way (onFailure), and the
  // writer thread's own bounded reset (windowWriterThread.ts) still copies the WAL back.
  worker.on("error", () => undefined);
  worker.on("message", () => {
    if (again) {
      again = false;
      worker.postMessage("checkpoint");
      return;
    }
    running = false;
    idle?.();
  });
  return {
    nudge() {
      if (closing !== undefined) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      worker.postMessage("checkpoint");
    },
    close() {
      closing ??= (async () => {
        again = false;
        if (running) await Promise.race([new Promise<void>((resolve) => (idle = resolve)), exited]);
        worker.postMessage("close");
        await exited;
      })();
      return closing;
    },
  };
}
