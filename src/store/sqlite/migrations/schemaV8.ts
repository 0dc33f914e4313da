import { UNSETTLED_STATUS_LIST_SQL } from "../../liveStatus.js";

/**
 * Schema version 8: the writer's by-transaction lookup (matching a pre-confirmed log to its
 * confirmed twin) indexes only the rows that can still change: pre-confirmed, dropped and confirmed.
 * A backfill writes finalized history, so it no longer maintains a random-key index row by row
 * (about a third of the writer thread's time per row: `schema-v8-unsettled-index` in
 * scripts/bench/results/measurements.csv). Finalized rows are found through
 * `logs_by_tx`, the full-hash reader index (store/sqlite/lifecycle.ts says when that one is missing).
 * The status list is the lookup's own (liveStatus.ts): SQLite uses a partial index only when the
 * query's WHERE holds the index's condition word for word.
 */

export const SCHEMA_V8 = `
DROP INDEX IF EXISTS logs_by_tx_tail;
CREATE INDEX IF NOT EXISTS logs_unsettled_by_tx_tail ON logs (substr(tx_hash, 51, 16)) WHERE status IN ${UNSETTLED_STATUS_LIST_SQL};
`;
