import { attributionViews } from "../../attributionViews.js";

/**
 * Postgres schema 13, as SQLite's (src/store/sqlite/migrations/schemaV13.ts): which user operation
 * each indexed log of a bundle belongs to, whether a bundle's logs are mapped, and the views that
 * credit a payment to its operation's codes (or the bundler's, outside every operation). Bundles
 * stored before are marked unmapped: their receipts were never read.
 * `builder_code_volume` reads `attributed_transfers` and follows it unchanged.
 */
export const POSTGRES_SCHEMA_V13 = /* sql */ `
CREATE TABLE user_operation_logs (
  tx_hash          text    NOT NULL REFERENCES transactions (tx_hash),
  token            text    NOT NULL,
  tx_log_position  integer NOT NULL,
  op_index         integer NOT NULL,
  PRIMARY KEY (tx_hash, token, tx_log_position)
);

ALTER TABLE transactions ADD COLUMN operation_logs text CHECK (operation_logs IN ('mapped', 'unmapped'));
ALTER TABLE transactions ADD COLUMN operation_logs_error text;

UPDATE transactions SET operation_logs = 'unmapped',
  operation_logs_error = 'stored before schema 13: the bundle''s receipt was not read'
WHERE user_operations > 0;

${attributionViews("CREATE OR REPLACE VIEW")}
`;
