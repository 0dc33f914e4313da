import { LIVE_STATUS_LIST_SQL, statusRankSql } from "../../liveStatus.js";

/**
 * Schema version 1. Conventions: addresses and hashes are lower-case 0x hex TEXT; token amounts are
 * exact decimal TEXT (uint256 does not fit a SQLite integer); block timestamps are unix seconds;
 * `*_at` columns are unix milliseconds of our own clock.
 *
 * Status lifecycle of a log: preconfirmed -> confirmed -> finalized; `removed` (its block was
 * reorged out) and `dropped` (a pre-confirmation its block never included) are kept, never deleted.
 */
export const SCHEMA_V1 = /* sql */ `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE logs (
  id               INTEGER PRIMARY KEY,
  chain_id         INTEGER NOT NULL,
  address          TEXT    NOT NULL,
  topic0           TEXT    NOT NULL,
  topic1           TEXT,
  topic2           TEXT,
  topic3           TEXT,
  data             TEXT    NOT NULL,
  block_number     INTEGER NOT NULL,
  block_hash       TEXT    NOT NULL,
  block_timestamp  INTEGER NOT NULL,
  tx_hash          TEXT    NOT NULL,
  tx_index         INTEGER NOT NULL,
  log_index        INTEGER NOT NULL,
  -- Position among this transaction's indexed logs: how a pre-confirmed log is matched to its confirmed twin.
  tx_log_position  INTEGER NOT NULL,
  status           TEXT    NOT NULL CHECK (status IN ('preconfirmed', 'confirmed', 'finalized', 'removed', 'dropped')),
  source           TEXT    NOT NULL CHECK (source IN ('backfill', 'head', 'pending', 'pending_ws')),
  first_seen_at    INTEGER NOT NULL,
  preconfirmed_at  INTEGER,
  confirmed_at     INTEGER,
  finalized_at     INTEGER,
  removed_at       INTEGER,
  -- A confirmed log is (block_hash, log_index); a pre-confirmed one has a zero block hash, so the
  -- pending block number and transaction join the key. The same log can never be stored twice.
  -- (One file holds one chain: see meta.chain_id.)
  UNIQUE (block_hash, log_index, block_number, tx_hash)
) STRICT;
CREATE INDEX logs_by_tx ON logs (tx_hash);
-- The unsettled rows the lifecycle keeps touching; one equality each, so SQLite can prove the index applies.
CREATE INDEX logs_preconfirmed ON logs (block_number) WHERE status = 'preconfirmed';
CREATE INDEX logs_confirmed ON logs (block_number) WHERE status = 'confirmed';

CREATE TABLE transfers (
  log_id           INTEGER PRIMARY KEY REFERENCES logs (id),
  chain_id         INTEGER NOT NULL,
  token            TEXT    NOT NULL,
  from_address     TEXT    NOT NULL,
  to_address       TEXT    NOT NULL,
  value            TEXT    NOT NULL,
  block_number     INTEGER NOT NULL,
  block_hash       TEXT    NOT NULL,
  block_timestamp  INTEGER NOT NULL,
  tx_hash          TEXT    NOT NULL,
  tx_index         INTEGER NOT NULL,
  log_index        INTEGER NOT NULL,
  status           TEXT    NOT NULL
) STRICT;
CREATE INDEX transfers_by_token_block ON transfers (token, block_number);
CREATE INDEX transfers_by_from ON transfers (from_address, block_number);
CREATE INDEX transfers_by_to ON transfers (to_address, block_number);

CREATE TABLE authorization_events (
  log_id           INTEGER PRIMARY KEY REFERENCES logs (id),
  chain_id         INTEGER NOT NULL,
  token            TEXT    NOT NULL,
  authorizer       TEXT    NOT NULL,
  nonce            TEXT    NOT NULL,
  kind             TEXT    NOT NULL CHECK (kind IN ('used', 'canceled')),
  block_number     INTEGER NOT NULL,
  block_hash       TEXT    NOT NULL,
  block_timestamp  INTEGER NOT NULL,
  tx_hash          TEXT    NOT NULL,
  tx_index         INTEGER NOT NULL,
  log_index        INTEGER NOT NULL,
  status           TEXT    NOT NULL
) STRICT;
CREATE INDEX authorization_events_by_nonce ON authorization_events (token, authorizer, nonce);
CREATE INDEX authorization_events_by_tx ON authorization_events (tx_hash);

-- The decoded tables copy the lifecycle columns of their log: one write to logs keeps them in step.
CREATE TRIGGER logs_lifecycle_to_decoded
AFTER UPDATE OF status, block_hash, block_number, block_timestamp, tx_index, log_index ON logs
BEGIN
  UPDATE transfers SET status = NEW.status, block_hash = NEW.block_hash, block_number = NEW.block_number,
    block_timestamp = NEW.block_timestamp, tx_index = NEW.tx_index, log_index = NEW.log_index
  WHERE log_id = NEW.id;
  UPDATE authorization_events SET status = NEW.status, block_hash = NEW.block_hash, block_number = NEW.block_number,
    block_timestamp = NEW.block_timestamp, tx_index = NEW.tx_index, log_index = NEW.log_index
  WHERE log_id = NEW.id;
END;

-- Block ranges fully indexed, per token, merged on write. The checkpoint is the end of the first range.
CREATE TABLE synced_ranges (
  chain_id    INTEGER NOT NULL,
  token       TEXT    NOT NULL,
  from_block  INTEGER NOT NULL,
  to_block    INTEGER NOT NULL CHECK (to_block >= from_block),
  PRIMARY KEY (chain_id, token, from_block)
) STRICT, WITHOUT ROWID;

CREATE VIEW live_transfers AS
SELECT * FROM transfers WHERE status IN ${LIVE_STATUS_LIST_SQL};

CREATE VIEW live_authorization_events AS
SELECT * FROM authorization_events WHERE status IN ${LIVE_STATUS_LIST_SQL};

-- One row per (token, authorizer, nonce) that has a live event: captured or canceled, with the
-- capture's Transfer (the log right after AuthorizationUsed in the same transaction, as FiatToken emits),
-- found through the unique key of logs.
-- A nonce without a row has not been seen.
CREATE VIEW authorization_states AS
WITH ranked AS (
  SELECT e.*, ROW_NUMBER() OVER (
    PARTITION BY e.chain_id, e.token, e.authorizer, e.nonce
    ORDER BY ${statusRankSql("e.status")}, e.block_number, e.log_index
  ) AS rank
  FROM live_authorization_events e
)
SELECT
  r.chain_id, r.token, r.authorizer, r.nonce,
  CASE r.kind WHEN 'used' THEN 'captured' ELSE 'canceled' END AS state,
  r.status, r.block_number, r.block_timestamp, r.tx_hash, r.log_index,
  t.from_address AS captured_from, t.to_address AS captured_to, t.value AS captured_value
FROM ranked r
LEFT JOIN logs next_log
  ON r.kind = 'used' AND next_log.block_hash = r.block_hash AND next_log.log_index = r.log_index + 1
  AND next_log.block_number = r.block_number AND next_log.tx_hash = r.tx_hash
LEFT JOIN transfers t ON t.log_id = next_log.id AND t.token = r.token
WHERE r.rank = 1;
`;
