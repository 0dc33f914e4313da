/**
 * Postgres schema 18, as SQLite's (src/store/sqlite/migrations/schemaV18.ts): the latest captures
 * with recorded gas read by index (the status page), and the captures without gas by when they
 * last changed (the driver's look after a restart).
 */
export const POSTGRES_SCHEMA_V18 = /* sql */ `
CREATE INDEX order_captures_gas ON order_captures (order_id) INCLUDE (gas_used, effective_gas_price)
  WHERE gas_used IS NOT NULL;
CREATE INDEX order_captures_without_gas ON order_captures (updated_at) WHERE gas_used IS NULL;
`;
