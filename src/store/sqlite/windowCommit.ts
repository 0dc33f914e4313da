import type { Database } from "better-sqlite3";
import { createAttributionWriter } from "./attributionWriter.js";
import { createLogWriter } from "./logWriter.js";
import { createSqliteOwedBlocks } from "./owedAttribution.js";
import { unpackStrings } from "../../rows/packedRows.js";
import { createSqliteSyncedRanges } from "./syncedRanges.js";
import { UNSHARED_WINDOW_GATE, WINDOW_YIELD_EVERY_ROWS, type WindowGate } from "./writeGate.js";
import type { InsertCounts, WindowWrite } from "../types.js";

/** Just the window's own fields (a fetched window carries more): what is posted to the writer thread. */
export const windowFields = (window: WindowWrite): WindowWrite => ({
  from: window.from,
  to: window.to,
  tokens: window.tokens,
  rows: window.rows,
  attribution: window.attribution,
  stageAttribution: window.stageAttribution,
  owed: window.owed,
});

/**
 * Commits a window with its synced range: a crash leaves neither a gap nor a duplicate. The same
 * function runs on the main thread or on the window writer's thread.
 *
 * The range is written in the transaction that writes the window's last rows. Normally that is the
 * only transaction. When a live write (a pre-confirmation, a head block) waits for the lock (see
 * writeGate.ts), the rows inserted so far are committed first, without the range, and the insert
 * resumes after the live write: a crash in between leaves the range unsynced, the next backfill
 * fetches the window again, and the unique key skips the rows already stored.
 *
 * What a live write waits for is the writer reaching its next check and committing what it holds, so
 * the lock is held for as little as it can be: the rows' strings are split before BEGIN, and while
 * live writes are running (one came through the gate in the last LIVE_RECENTLY_MS) the rows are also
 * committed every COMMIT_EVERY_ROWS_WHILE_LIVE rows, so a step aside never has a whole window's pages
 * to write. A bulk load with no live writes keeps one transaction per window.
 */
export function createWindowCommit(
  db: Database,
  chainId: number,
  gate: WindowGate = UNSHARED_WINDOW_GATE,
): (window: WindowWrite, now: number) => InsertCounts {
  const logs = createLogWriter(db);
  const attribution = createAttributionWriter(db);
  const synced = createSqliteSyncedRanges(db, chainId);
  const owed = createSqliteOwedBlocks(db);
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const rollback = db.prepare("ROLLBACK");
  /** Rows inserted since the transaction opened (counted in steps of WINDOW_YIELD_EVERY_ROWS). */
  let uncommittedRows = 0;
  const open = () => {
    gate.enter();
    try {
      begin.run();
    } catch (error) {
      gate.leave();
      throw error;
    }
    uncommittedRows = 0;
  };
  const close = (statement: typeof commit) => {
    try {
      statement.run();
    } finally {
      gate.leave();
    }
  };
  const live = createLiveWriteWatch(gate);
  /**
   * Between rows: when a live write waits, commit what is inserted and let it go first; while live
   * writes are running, commit every COMMIT_EVERY_ROWS_WHILE_LIVE rows anyway.
   */
  const stepAside = () => {
    uncommittedRows += WINDOW_YIELD_EVERY_ROWS;
    if (
      gate.liveWriteWaiting() ||
      (uncommittedRows >= COMMIT_EVERY_ROWS_WHILE_LIVE && live.recently())
    ) {
      close(commit);
      open();
    }
  };

  return (window, now) => {
    const strings = unpackStrings(window.rows);
    open();
    try {
      const between = { every: WINDOW_YIELD_EVERY_ROWS, run: stepAside };
      if (window.stageAttribution === true) attribution.stagePacked(window.attribution, between);
      else attribution.insertPacked(window.attribution, between);
      const counts = logs.insertPacked(window.rows, now, between, strings);
      // What the window owes is recorded with its range: a window fetched again after a crash owes it again.
      if (window.owed !== undefined) owed.record(window.owed, now);
      for (const token of window.tokens) synced.add(token, window);
      close(commit);
      return counts;
    } catch (error) {
      if (db.inTransaction) close(rollback);
      else gate.leave();
      throw error;
    }
  };
}

/** While live writes are running, a window's rows are committed at least this often (see createWindowCommit). */
export const COMMIT_EVERY_ROWS_WHILE_LIVE = 250;
/** Live writes count as running for this long after the last one. */
export const LIVE_RECENTLY_MS = 2_000;

/** Whether a live write went through the gate in the last LIVE_RECENTLY_MS, as seen from the writer's side. */
function createLiveWriteWatch(gate: WindowGate) {
  let seen = gate.liveWrites();
  let seenAt = Number.NEGATIVE_INFINITY;
  return {
    recently(): boolean {
      const now = performance.now();
      const count = gate.liveWrites();
      if (count !== seen) {
        seen = count;
        seenAt = now;
      }
      return now - seenAt < LIVE_RECENTLY_MS;
    },
  };
}
