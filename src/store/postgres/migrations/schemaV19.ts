/**
 * Postgres schema 19, as SQLite's (src/store/sqlite/migrations/schemaV19.ts): when the node was
 * first handed a capture's current bytes, which the driver's stuck bound counts from.
 */
export const POSTGRES_SCHEMA_V19 = /* sql */ `
ALTER TABLE order_captures ADD COLUMN first_broadcast_at BIGINT;
UPDATE order_captures SET first_broadcast_at = last_broadcast_at;
`;
