import { UNSETTLED_STATUS_LIST_SQL } from "../../liveStatus.js";

/**
 * Postgres schema 8, as SQLite's (store/sqlite/migrations/schemaV8.ts, whose comment explains it):
 * the same statements serve both.
 */
export const POSTGRES_SCHEMA_V8 = `
DROP INDEX IF EXISTS logs_by_tx_tail;
CREATE INDEX IF NOT EXISTS logs_unsettled_by_tx_tail ON logs (substr(tx_hash, 51, 16)) WHERE status IN ${UNSETTLED_STATUS_LIST_SQL};
`;
