import { createCheckpointer, type Checkpointer } from "./threads/checkpointer.js";
import { WAL_AUTOCHECKPOINT_PAGES, type Database } from "./openDatabase.js";

/** How often the store's connection is asked whether it wrote since the last look. */
export const WAL_CHECK_INTERVAL_MS = 1_000;

export type WalCheckpoints = {
  /** Asks for a checkpoint now (the window writer, after each committed window). */
  nudge: () => void;
  /** Stops looking, waits for a running checkpoint and stops its thread. */
  close: () => Promise<void>;
};

/**
 * Copies the WAL back into the database beside the store's writes, never inside one of them.
 *
 * SQLite's automatic checkpoint runs in the COMMIT of whichever write crosses `wal_autocheckpoint`
 * pages, under the write lock, on the thread that commits: measured on bursts of 200
 * pre-confirmations, one commit in ten took 10–15 ms instead of 3, the copy and fsync of 4 MB.
 * That was the tail of the pre-confirmation latency. The store's connection turns it off; once a
 * second, if the connection wrote since the last look (`total_changes()` counts every write of
 * it, whatever the path), the checkpointer thread runs a PASSIVE checkpoint, which copies and
 * syncs while the writers carry on. The thread starts on the first need: a store that never writes
 * (status, a read-only command) never starts one. Should the thread die, SQLite's automatic
 * checkpoint is turned back on.
 */
export function createWalCheckpoints(db: Database): WalCheckpoints {
  if (db.memory || db.readonly) return { nudge: () => undefined, close: async () => undefined };
  db.pragma("wal_autocheckpoint = 0");
  const changes = db.prepare("SELECT total_changes()").pluck();
  let seen = changes.get() as number;
  let checkpointer: Checkpointer | undefined;
  let failed = false;
  // A checkpointer thread that died hands the WAL back to SQLite's own automatic checkpoint.
  const fallBack = () => {
    failed = true;
    clearInterval(timer);
    if (db.open) db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  };
  const nudge = () => {
    if (!failed) (checkpointer ??= createCheckpointer(db.name, fallBack)).nudge();
  };
  const timer = setInterval(() => {
    if (!db.open) return;
    const now = changes.get() as number;
    if (now === seen) return;
    seen = now;
    nudge();
  }, WAL_CHECK_INTERVAL_MS);
  timer.unref();
  return {
    nudge,
    close: async () => {
      clearInterval(timer);
      await checkpointer?.close();
    },
  };
}
