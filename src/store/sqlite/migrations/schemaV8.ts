/**
 * Schema version 8: the writer's by-transaction lookup (matching a pre-confirmed log to its
 * confirmed twin) indexes only the rows that can still change: pre-confirmed, dropped and confirmed.
 * A backfill writes finalized history, so it no longer maintains a random-key index row by row
 * (measured: about a third of the writer thread's time per row). Finalized rows are found through
 * `logs_by_tx`, the full-hash reader index (store/lifecycle.ts says when that one is missing).
 * The status list is written exactly as the lookup writes it: SQLite uses a partial index only
 * when the query's WHERE holds the index's condition word for word.
 */
export const UNSETTLED_STATUS_LIST_SQL = "('preconfirmed', 'dropped', 'confirmed')";

export const SCHEMA_V8 = `
DROP INDEX IF EXISTS logs_by_tx_tail;
CREATE INDEX IF NOT EXISTS logs_unsettled_by_tx_tail ON logs (substr(tx_hash, 51, 16)) WHERE status IN ${UNSETTLED_STATUS_LIST_SQL};
`;
