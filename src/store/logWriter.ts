import type { Database } from "better-sqlite3";
import { eventName, type EventName } from "../decode/paymentEvents.js";
import type { LogRow, LogStatus } from "../decode/logRow.js";
import type { Metrics } from "../ops/metrics.js";

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

  return {
    insertRows(rows: readonly LogRow[], now: number): InsertCounts {
      const counts: InsertCounts = { inserted: 0, duplicates: 0, byEvent: [] };
      const tally = new Map<string, EventCount>();
      for (const row of rows) {
        // Positional parameters: measurably faster than named ones on this hot path.
        const status = row.status;
        const result = insertLog.run(
          row.chainId,
          row.address,
          row.topics[0] ?? null,
          row.topics[1] ?? null,
          row.topics[2] ?? null,
          row.topics[3] ?? null,
          row.data,
          row.blockNumber,
          row.blockHash,
          row.blockTimestamp,
          row.transactionHash,
          row.transactionIndex,
          row.logIndex,
          row.txLogPosition,
          status,
          row.source,
          now,
          status === "preconfirmed" ? now : null,
          status === "confirmed" || status === "finalized" ? now : null,
          status === "finalized" ? now : null,
        );
        if (result.changes === 0) {
          counts.duplicates++;
          continue;
        }
        const id = result.lastInsertRowid;
        const carried = [row.blockNumber, row.blockHash, row.blockTimestamp, row.transactionHash, row.transactionIndex, row.logIndex, row.status];
        const event = row.event;
        if (event.kind === "transfer") insertTransfer.run(id, row.chainId, row.address, event.from, event.to, event.value, ...carried);
        else insertAuthorization.run(id, row.chainId, row.address, event.authorizer, event.nonce, event.used ? "used" : "canceled", ...carried);
        counts.inserted++;
        const name = eventName(event);
        const key = `${name}:${row.status}`;
        const count = tally.get(key);
        if (count === undefined) tally.set(key, { event: name, status: row.status, logs: 1 });
        else count.logs++;
      }
      counts.byEvent = [...tally.values()];
      return counts;
    },
  };
}

export type LogWriter = ReturnType<typeof createLogWriter>;

/** Adds stored rows to `flashindex_logs_indexed_total{event,status}`. */
export function countIndexed(metrics: Pick<Metrics, "logsIndexed">, byEvent: readonly EventCount[]): void {
  for (const { event, status, logs } of byEvent) metrics.logsIndexed.inc({ event, status }, logs);
}
