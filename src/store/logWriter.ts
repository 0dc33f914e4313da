import type { Database } from "better-sqlite3";
import type { EventName } from "../decode/paymentEvents.js";
import type { LogRow, LogStatus } from "../decode/logRow.js";
import type { Metrics } from "../ops/metrics.js";
import { PACKED_FIELDS, packRows, type PackedRows } from "./packedRows.js";

/** Newly stored logs of one event at one status. */
export type EventCount = { event: EventName; status: LogStatus; logs: number };
export type InsertCounts = { inserted: number; duplicates: number; byEvent: EventCount[] };

/**
 * Inserts decoded rows into `logs` and their decoded table. Idempotent: a log already stored
 * (same block hash, block number, transaction and log index) is skipped, never doubled.
 * Call inside a transaction; it opens none of its own.
 */
export function createLogWriter(db: Database) {
  const insertLog = db.prepare(`
    INSERT INTO logs (chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash,
      block_timestamp, tx_hash, tx_index, log_index, tx_log_position, status, source, first_seen_at,
      preconfirmed_at, confirmed_at, finalized_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING`);
  const insertTransfer = db.prepare(`
    INSERT INTO transfers (log_id, chain_id, token, from_address, to_address, value, block_number, block_hash,
      block_timestamp, tx_hash, tx_index, log_index, status)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const insertAuthorization = db.prepare(`
    INSERT INTO authorization_events (log_id, chain_id, token, authorizer, nonce, kind, block_number, block_hash,
      block_timestamp, tx_hash, tx_index, log_index, status)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);

  /**
   * Inserts packed rows (see packedRows.ts); the one insert path, for backfill windows and live rows
   * alike. `between.run` is called after every `between.every` rows (the window writer steps aside there).
   */
  function insertPacked({ count, values: v }: PackedRows, now: number, between?: { every: number; run: () => void }): InsertCounts {
    const counts: InsertCounts = { inserted: 0, duplicates: 0, byEvent: [] };
    const tally = new Map<string, EventCount>();
    for (let r = 0, i = 0; r < count; r++, i += PACKED_FIELDS) {
      if (between !== undefined && r > 0 && r % between.every === 0) between.run();
      // Positional parameters: measurably faster than named ones on this hot path.
      const status = v[i + 14] as LogStatus;
      const settled = status === "confirmed" || status === "finalized";
      const result = insertLog.run(
        v[i + 13], v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7], v[i + 8], v[i + 9], v[i + 10], v[i + 11], v[i + 12],
        status, v[i + 15], now, status === "preconfirmed" ? now : null, settled ? now : null, status === "finalized" ? now : null,
      );
      if (result.changes === 0) {
        counts.duplicates++;
        continue;
      }
      const id = result.lastInsertRowid;
      const event = v[i + 16] as EventName;
      // Carried: block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status.
      if (event === "transfer") insertTransfer.run(id, v[i + 13], v[i], v[i + 17], v[i + 18], v[i + 19], v[i + 6], v[i + 7], v[i + 8], v[i + 9], v[i + 10], v[i + 11], status);
      else insertAuthorization.run(id, v[i + 13], v[i], v[i + 17], v[i + 18], event === "authorization_used" ? "used" : "canceled", v[i + 6], v[i + 7], v[i + 8], v[i + 9], v[i + 10], v[i + 11], status);
      counts.inserted++;
      const key = `${event}:${status}`;
      const count = tally.get(key);
      if (count === undefined) tally.set(key, { event, status, logs: 1 });
      else count.logs++;
    }
    counts.byEvent = [...tally.values()];
    return counts;
  }

  return {
    insertPacked,
    insertRows: (rows: readonly LogRow[], now: number): InsertCounts => insertPacked(packRows(rows), now),
  };
}

export type LogWriter = ReturnType<typeof createLogWriter>;

/** Adds stored rows to `flashindex_logs_indexed_total{event,status}`. */
export function countIndexed(metrics: Pick<Metrics, "logsIndexed">, byEvent: readonly EventCount[]): void {
  for (const { event, status, logs } of byEvent) metrics.logsIndexed.inc({ event, status }, logs);
}
