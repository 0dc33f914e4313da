import type { Database } from "better-sqlite3";
import type { EventName } from "../../rows/paymentEvents.js";
import type { LogRow, LogStatus } from "../../rows/logRow.js";
import {
  NUMBER_FIELDS,
  packRows,
  STRING_FIELDS,
  unpackStrings,
  type PackedRows,
} from "../../rows/packedRows.js";
import { createEventTally } from "../insertCounts.js";
import type { InsertCounts } from "../types.js";

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
   * `strings`: the rows' strings already unpacked (the window writer splits them before it takes the lock).
   */
  function insertPacked(
    packed: PackedRows,
    now: number,
    between?: { every: number; run: () => void },
    strings = unpackStrings(packed),
  ): InsertCounts {
    const counts: InsertCounts = { inserted: 0, duplicates: 0, byEvent: [] };
    const tally = createEventTally();
    const t = strings;
    const n = packed.numbers;
    for (let r = 0, i = 0, k = 0; r < packed.count; r++, i += STRING_FIELDS, k += NUMBER_FIELDS) {
      if (between !== undefined && r > 0 && r % between.every === 0) between.run();
      // Positional parameters: measurably faster than named ones on this hot path. "" is NULL (packedRows.ts).
      const status = t[i + 8] as LogStatus;
      const settled = status === "confirmed" || status === "finalized";
      const result = insertLog.run(
        n[k + 5],
        t[i],
        t[i + 1],
        t[i + 2] || null,
        t[i + 3] || null,
        t[i + 4] || null,
        t[i + 5],
        n[k],
        t[i + 6],
        n[k + 1],
        t[i + 7],
        n[k + 2],
        n[k + 3],
        n[k + 4],
        status,
        t[i + 9],
        now,
        status === "preconfirmed" ? now : null,
        settled ? now : null,
        status === "finalized" ? now : null,
      );
      if (result.changes === 0) {
        counts.duplicates++;
        continue;
      }
      const id = result.lastInsertRowid;
      const event = t[i + 10] as EventName;
      // Carried: block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status.
      if (event === "transfer")
        insertTransfer.run(
          id,
          n[k + 5],
          t[i],
          t[i + 11],
          t[i + 12],
          t[i + 13],
          n[k],
          t[i + 6],
          n[k + 1],
          t[i + 7],
          n[k + 2],
          n[k + 3],
          status,
        );
      else
        insertAuthorization.run(
          id,
          n[k + 5],
          t[i],
          t[i + 11],
          t[i + 12],
          event === "authorization_used" ? "used" : "canceled",
          n[k],
          t[i + 6],
          n[k + 1],
          t[i + 7],
          n[k + 2],
          n[k + 3],
          status,
        );
      counts.inserted++;
      tally.add(event, status);
    }
    counts.byEvent = tally.counts();
    return counts;
  }

  return {
    insertPacked,
    insertRows: (rows: readonly LogRow[], now: number): InsertCounts =>
      insertPacked(packRows(rows), now),
  };
}

export type LogWriter = ReturnType<typeof createLogWriter>;
