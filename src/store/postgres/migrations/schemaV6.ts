/**
 * Postgres schema 6, as SQLite's (src/store/schemaV6.ts): the writer's lookup of a log by its
 * transaction uses an index on the hash's last 8 bytes, and `logs_by_tx` becomes a reader index
 * that a bulk backfill drops and builds once at its end.
 */
export const POSTGRES_SCHEMA_V6 = `
CREATE INDEX IF NOT EXISTS logs_by_tx_tail ON logs (substr(tx_hash, 51, 16));
`;
