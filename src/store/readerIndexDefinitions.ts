/**
 * Indexes that serve readers (payments by token, payer or payee in block order, logs and
 * authorization events by transaction, attribution codes by code) and that the writer itself never
 * needs; both backends build them from here. Most keys are random (addresses, hashes), so maintaining
 * them row by row is the dearest part of an insert (and even the ordered one by token and block
 * costs a seventh of it); a long backfill drops them and builds each once, sorted, at its end.
 * `CREATE INDEX IF NOT EXISTS` makes the build idempotent: a backfill killed before it leaves them
 * missing, and the next backfill (every `start` runs one) builds them.
 */
export const READER_INDEXES: ReadonlyArray<{ name: string; sql: string }> = [
  {
    name: "transfers_by_token_block",
    sql: "CREATE INDEX IF NOT EXISTS transfers_by_token_block ON transfers (token, block_number)",
  },
  {
    name: "transfers_by_from",
    sql: "CREATE INDEX IF NOT EXISTS transfers_by_from ON transfers (from_address, block_number)",
  },
  {
    name: "transfers_by_to",
    sql: "CREATE INDEX IF NOT EXISTS transfers_by_to ON transfers (to_address, block_number)",
  },
  { name: "logs_by_tx", sql: "CREATE INDEX IF NOT EXISTS logs_by_tx ON logs (tx_hash)" },
  {
    name: "authorization_events_by_tx",
    sql: "CREATE INDEX IF NOT EXISTS authorization_events_by_tx ON authorization_events (tx_hash)",
  },
  {
    name: "attribution_codes_by_code",
    sql: "CREATE INDEX IF NOT EXISTS attribution_codes_by_code ON attribution_codes (code)",
  },
];
