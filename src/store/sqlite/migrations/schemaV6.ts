/**
 * Schema version 6: the writer's own lookup of a log by its transaction (matching a pre-confirmed
 * log to its confirmed twin) gets a narrow index of its own, on the last 8 bytes of the hash (the tail: a hash
 * written with leading zeros, as test and benchmark chains do, would give every row one prefix).
 * `logs_by_tx`, the full-hash index readers use, becomes a reader index: a long backfill builds it
 * once at its end instead of row by row. Its keys are random, so maintaining it per row was about a
 * fifth of an insert; the tail index holds a quarter of the bytes and costs a fraction of that.
 */
export const SCHEMA_V6 = `
CREATE INDEX IF NOT EXISTS logs_by_tx_tail ON logs (substr(tx_hash, 51, 16));
`;
