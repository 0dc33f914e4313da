/**
 * Schema version 10: staging tables for a bulk backfill's attribution.
 *
 * `transactions`, `user_operations` and `attribution_codes` are keyed by transaction hash, and a
 * hash is random: every window's rows land all over those keys' b-trees, so a window of 2,000
 * transactions rewrote about 4,000 pages of them, and the cost grew with the tables (measured, on
 * the writer alone: 9 µs a transaction at 100,000 stored, 31 µs at 400,000). A bulk backfill
 * appends its windows' attribution to these tables instead, which have no key (a row id only), in
 * the transaction that commits the window's logs, and moves them into the keyed tables in hash
 * order once, when it ends (store/stagedAttribution.ts), beside the reader indexes' build. A
 * backfill killed before its end leaves them to the next one. Their columns are those of the tables
 * they feed.
 */
export const SCHEMA_V10 = `
CREATE TABLE staged_transactions (
  tx_hash TEXT NOT NULL, chain_id INTEGER NOT NULL, from_address TEXT NOT NULL, to_address TEXT, selector TEXT,
  input_bytes INTEGER NOT NULL, attribution TEXT NOT NULL, schema_id INTEGER, registry_address TEXT,
  registry_chain_id TEXT, malformed_reason TEXT, registry_error TEXT, user_operations INTEGER NOT NULL, fetched_at INTEGER NOT NULL
) STRICT;
CREATE TABLE staged_user_operations (
  tx_hash TEXT NOT NULL, op_index INTEGER NOT NULL, sender TEXT NOT NULL, aggregator TEXT, attribution TEXT NOT NULL,
  schema_id INTEGER, malformed_reason TEXT, registry_error TEXT
) STRICT;
CREATE TABLE staged_attribution_codes (
  tx_hash TEXT NOT NULL, op_index INTEGER NOT NULL, position INTEGER NOT NULL, code TEXT NOT NULL, role TEXT NOT NULL,
  registry TEXT NOT NULL, registry_chain_id TEXT, registry_address TEXT
) STRICT;
`;
