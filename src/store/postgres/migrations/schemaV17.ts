/**
 * Postgres schema 17, as SQLite's (src/store/sqlite/migrations/schemaV17.ts): each capture's gas
 * used and effective gas price, from the receipt that showed the payment.
 */
export const POSTGRES_SCHEMA_V17 = /* sql */ `
ALTER TABLE order_captures ADD COLUMN gas_used numeric(78, 0);
ALTER TABLE order_captures ADD COLUMN effective_gas_price numeric(78, 0);
ALTER TABLE order_captures ADD COLUMN gas_tx_hash text;
`;
