import type { Database } from "better-sqlite3";
import type { Hex } from "viem";
import type { LogRow } from "../decode/logRow.js";
import { createAttributionWriter, type AttributedTransaction } from "./attributionWriter.js";
import { createLogWriter, type InsertCounts } from "./logWriter.js";
import { packRows, type PackedRows } from "./packedRows.js";
import { createSyncedRanges } from "./syncedRanges.js";

/** One fetched backfill window as the store takes it: its rows, its transactions' attribution, and the range it completes. */
export type WindowWrite = { from: number; to: number; tokens: readonly Hex[]; rows: readonly LogRow[]; transactions: readonly AttributedTransaction[] };

/** The same window with its rows packed (packedRows.ts): how it crosses to the writer thread. */
export type PackedWindow = Omit<WindowWrite, "rows"> & { rows: PackedRows };

export const packWindow = (window: WindowWrite): PackedWindow => ({ ...window, rows: packRows(window.rows) });

/**
 * Commits a window in ONE transaction with its synced range: a crash leaves neither a gap nor a
 * duplicate. The same function runs on the main thread or on the window writer's thread.
 */
export function createWindowCommit(db: Database, chainId: number): (window: PackedWindow, now: number) => InsertCounts {
  const logs = createLogWriter(db);
  const attribution = createAttributionWriter(db);
  const synced = createSyncedRanges(db, chainId);
  const commit = db.transaction((window: PackedWindow, now: number) => {
    const counts = logs.insertPacked(window.rows, now);
    attribution.insert(window.transactions, now);
    for (const token of window.tokens) synced.add(token, window);
    return counts;
  });
  return (window, now) => commit.immediate(window, now);
}
