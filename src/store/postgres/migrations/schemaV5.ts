import { LIVE_STATUS_LIST_SQL, statusRankSql } from "../../liveStatus.js";

/**
 * The Postgres schema at the SQLite store's version 5, in one step: the same tables, columns, views,
 * statuses and order triggers (src/store/schemaV1..V5.ts), with Postgres types. Token values are
 * numeric(78,0) (exact, summable); hashes, addresses and nonces lower-case 0x hex text; block
 * timestamps unix seconds and `*_at` unix milliseconds, as bigint. Every name is created in the
 * configured schema (search_path), so several deployments can share one database.
 * Later versions are appended to POSTGRES_MIGRATIONS with the SQLite version they match.
 */
export const POSTGRES_SCHEMA_V5 = /* sql */ `
CREATE TABLE meta (
  key   text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE logs (
  id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  chain_id         bigint  NOT NULL,
  address          text    NOT NULL,
  topic0           text    NOT NULL,
  topic1           text,
  topic2           text,
  topic3           text,
  data             text    NOT NULL,
  block_number     bigint  NOT NULL,
  block_hash       text    NOT NULL,
  block_timestamp  bigint  NOT NULL,
  tx_hash          text    NOT NULL,
  tx_index         integer NOT NULL,
  log_index        integer NOT NULL,
  tx_log_position  integer NOT NULL,
  status           text    NOT NULL CHECK (status IN ('preconfirmed', 'confirmed', 'finalized', 'removed', 'dropped')),
  source           text    NOT NULL CHECK (source IN ('backfill', 'head', 'pending', 'pending_ws')),
  first_seen_at    bigint  NOT NULL,
  preconfirmed_at  bigint,
  confirmed_at     bigint,
  finalized_at     bigint,
  removed_at       bigint,
  UNIQUE (block_number, log_index, tx_hash, block_hash)
);
CREATE INDEX logs_by_tx ON logs (tx_hash);
CREATE INDEX logs_preconfirmed ON logs (block_number) WHERE status = 'preconfirmed';
CREATE INDEX logs_confirmed ON logs (block_number) WHERE status = 'confirmed';

CREATE TABLE transfers (
  log_id           bigint  PRIMARY KEY REFERENCES logs (id),
  chain_id         bigint  NOT NULL,
  token            text    NOT NULL,
  from_address     text    NOT NULL,
  to_address       text    NOT NULL,
  value            numeric(78, 0) NOT NULL,
  block_number     bigint  NOT NULL,
  block_hash       text    NOT NULL,
  block_timestamp  bigint  NOT NULL,
  tx_hash          text    NOT NULL,
  tx_index         integer NOT NULL,
  log_index        integer NOT NULL,
  status           text    NOT NULL
);
CREATE INDEX transfers_by_token_block ON transfers (token, block_number);
CREATE INDEX transfers_by_from ON transfers (from_address, block_number);
CREATE INDEX transfers_by_to ON transfers (to_address, block_number);

CREATE TABLE authorization_events (
  log_id           bigint  PRIMARY KEY REFERENCES logs (id),
  chain_id         bigint  NOT NULL,
  token            text    NOT NULL,
  authorizer       text    NOT NULL,
  nonce            text    NOT NULL,
  kind             text    NOT NULL CHECK (kind IN ('used', 'canceled')),
  block_number     bigint  NOT NULL,
  block_hash       text    NOT NULL,
  block_timestamp  bigint  NOT NULL,
  tx_hash          text    NOT NULL,
  tx_index         integer NOT NULL,
  log_index        integer NOT NULL,
  status           text    NOT NULL
);
CREATE INDEX authorization_events_by_nonce ON authorization_events (token, authorizer, nonce);
CREATE INDEX authorization_events_by_tx ON authorization_events (tx_hash);

-- The decoded tables copy the lifecycle columns of their log: one write to logs keeps them in step.
CREATE FUNCTION logs_lifecycle_to_decoded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE transfers SET status = NEW.status, block_hash = NEW.block_hash, block_number = NEW.block_number,
    block_timestamp = NEW.block_timestamp, tx_index = NEW.tx_index, log_index = NEW.log_index
  WHERE log_id = NEW.id;
  UPDATE authorization_events SET status = NEW.status, block_hash = NEW.block_hash, block_number = NEW.block_number,
    block_timestamp = NEW.block_timestamp, tx_index = NEW.tx_index, log_index = NEW.log_index
  WHERE log_id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER logs_lifecycle_to_decoded
AFTER UPDATE OF status, block_hash, block_number, block_timestamp, tx_index, log_index ON logs
FOR EACH ROW EXECUTE FUNCTION logs_lifecycle_to_decoded();

CREATE TABLE synced_ranges (
  chain_id    bigint NOT NULL,
  token       text   NOT NULL,
  from_block  bigint NOT NULL,
  to_block    bigint NOT NULL CHECK (to_block >= from_block),
  PRIMARY KEY (chain_id, token, from_block)
);

CREATE VIEW live_transfers AS
SELECT * FROM transfers WHERE status IN ${LIVE_STATUS_LIST_SQL};

CREATE VIEW live_authorization_events AS
SELECT * FROM authorization_events WHERE status IN ${LIVE_STATUS_LIST_SQL};

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

CREATE TABLE transactions (
  tx_hash            text    PRIMARY KEY,
  chain_id           bigint  NOT NULL,
  from_address       text    NOT NULL,
  to_address         text,
  selector           text,
  input_bytes        integer NOT NULL,
  attribution        text    NOT NULL CHECK (attribution IN ('none', 'codes', 'malformed', 'unknown_schema')),
  schema_id          integer,
  registry_address   text,
  registry_chain_id  text,
  malformed_reason   text,
  user_operations    integer NOT NULL DEFAULT 0,
  fetched_at         bigint  NOT NULL,
  registry_error     text
);

CREATE TABLE user_operations (
  tx_hash            text    NOT NULL REFERENCES transactions (tx_hash),
  op_index           integer NOT NULL,
  sender             text    NOT NULL,
  attribution        text    NOT NULL CHECK (attribution IN ('none', 'codes', 'malformed', 'unknown_schema')),
  schema_id          integer,
  malformed_reason   text,
  registry_error     text,
  aggregator         text,
  PRIMARY KEY (tx_hash, op_index)
);

CREATE TABLE attribution_codes (
  tx_hash            text    NOT NULL REFERENCES transactions (tx_hash),
  op_index           integer NOT NULL,
  position           integer NOT NULL,
  code               text    NOT NULL,
  role               text    NOT NULL CHECK (role IN ('code', 'app', 'wallet', 'service')),
  registry           text    NOT NULL DEFAULT 'canonical' CHECK (registry IN ('canonical', 'custom', 'malformed', 'unrecorded')),
  registry_chain_id  text    CHECK ((registry_chain_id IS NOT NULL) = (registry = 'custom')),
  registry_address   text    CHECK ((registry_address IS NOT NULL) = (registry = 'custom')),
  PRIMARY KEY (tx_hash, op_index, position)
);
CREATE INDEX attribution_codes_by_code ON attribution_codes (code);

CREATE TABLE agent_registrations (
  wallet_address     text   PRIMARY KEY,
  builder_code       text   NOT NULL,
  registered_at      bigint NOT NULL,
  last_confirmed_at  bigint NOT NULL
);

CREATE VIEW attributed_transfers AS
SELECT t.*, c.code, c.role, c.op_index, c.registry, c.registry_chain_id, c.registry_address
FROM live_transfers t
JOIN attribution_codes c ON c.tx_hash = t.tx_hash;

-- Exact here: value is numeric.
CREATE VIEW builder_code_volume AS
SELECT code, registry, registry_chain_id, registry_address, token,
  COUNT(DISTINCT log_id) AS payments, SUM(value) AS volume
FROM attributed_transfers
GROUP BY registry, registry_chain_id, registry_address, code, token;

CREATE VIEW wallet_codes AS
SELECT tx.from_address AS wallet, c.code, c.role, c.registry, c.registry_chain_id, c.registry_address,
  COUNT(*) AS transactions
FROM transactions tx JOIN attribution_codes c ON c.tx_hash = tx.tx_hash AND c.op_index = -1
GROUP BY tx.from_address, c.registry, c.registry_chain_id, c.registry_address, c.code, c.role
UNION ALL
SELECT op.sender, c.code, c.role, c.registry, c.registry_chain_id, c.registry_address, COUNT(*)
FROM user_operations op JOIN attribution_codes c ON c.tx_hash = op.tx_hash AND c.op_index = op.op_index
GROUP BY op.sender, c.registry, c.registry_chain_id, c.registry_address, c.code, c.role
UNION ALL
SELECT wallet_address, builder_code, 'registered', 'canonical', NULL, NULL, 0 FROM agent_registrations;

CREATE VIEW unattributed_transfers AS
SELECT t.* FROM live_transfers t
JOIN transactions tx ON tx.tx_hash = t.tx_hash
WHERE NOT EXISTS (SELECT 1 FROM attribution_codes c WHERE c.tx_hash = t.tx_hash);

CREATE TABLE orders (
  id                    bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  chain_id              bigint  NOT NULL,
  token                 text    NOT NULL,
  authorizer            text    NOT NULL,
  payee                 text    NOT NULL,
  value                 numeric(78, 0) NOT NULL,
  valid_after           bigint  NOT NULL,
  valid_before          bigint  NOT NULL,
  nonce                 text    NOT NULL,
  kind                  text    NOT NULL CHECK (kind IN ('transfer', 'receive')),
  signature             text    NOT NULL,
  state                 text    NOT NULL CHECK (state IN ('authorized', 'voided_offchain', 'captured', 'canceled', 'expired')),
  offchain_state        text    NOT NULL DEFAULT 'authorized' CHECK (offchain_state IN ('authorized', 'voided_offchain')),
  event_status          text    CHECK (event_status IN ${LIVE_STATUS_LIST_SQL}),
  event_tx_hash         text,
  voided_then_captured  boolean NOT NULL GENERATED ALWAYS AS (state = 'captured' AND offchain_state = 'voided_offchain') STORED,
  created_at            bigint  NOT NULL,
  updated_at            bigint  NOT NULL,
  UNIQUE (chain_id, token, authorizer, nonce),
  CHECK ((state IN ('captured', 'canceled')) = (event_status IS NOT NULL))
);
CREATE INDEX orders_by_state ON orders (state, valid_before);

CREATE TABLE order_transitions (
  id            bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id      bigint  NOT NULL REFERENCES orders (id),
  from_state    text,
  to_state      text    NOT NULL,
  event_status  text,
  cause         text    NOT NULL,
  tx_hash       text,
  at            bigint  NOT NULL
);
CREATE INDEX order_transitions_by_order ON order_transitions (order_id, id);
CREATE INDEX order_transitions_flagged ON order_transitions (id) WHERE cause = 'captured_after_void';

CREATE TABLE order_state_transitions (
  from_state  text NOT NULL,
  to_state    text NOT NULL,
  PRIMARY KEY (from_state, to_state)
);
INSERT INTO order_state_transitions (from_state, to_state) VALUES
  ('authorized', 'voided_offchain'),
  ('authorized', 'expired'),
  ('voided_offchain', 'expired'),
  ('authorized', 'captured'), ('voided_offchain', 'captured'), ('expired', 'captured'),
  ('authorized', 'canceled'), ('voided_offchain', 'canceled'), ('expired', 'canceled'),
  ('captured', 'canceled'), ('canceled', 'captured'),
  ('captured', 'authorized'), ('captured', 'voided_offchain'),
  ('canceled', 'authorized'), ('canceled', 'voided_offchain');

-- The database itself refuses a state change outside order_state_transitions, whoever writes.
CREATE FUNCTION orders_refuse_illegal_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.state IS DISTINCT FROM NEW.state
    AND NOT EXISTS (SELECT 1 FROM order_state_transitions WHERE from_state = OLD.state AND to_state = NEW.state) THEN
    RAISE EXCEPTION 'illegal order transition' USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER orders_refuse_illegal_transition
BEFORE UPDATE OF state ON orders
FOR EACH ROW EXECUTE FUNCTION orders_refuse_illegal_transition();

CREATE VIEW order_chain_targets AS
SELECT o.id AS order_id, o.chain_id, o.token, o.authorizer, o.nonce, o.state AS current_state,
  o.event_status AS current_status, o.offchain_state,
  e.kind AS event_kind, e.status AS event_status, e.tx_hash AS event_tx_hash,
  CASE
    WHEN e.kind = 'used' THEN 'captured'
    WHEN e.kind = 'canceled' THEN 'canceled'
    WHEN o.state IN ('captured', 'canceled') THEN o.offchain_state
    ELSE o.state
  END AS target_state
FROM orders o
LEFT JOIN authorization_events e ON e.log_id = (
  SELECT x.log_id FROM authorization_events x
  WHERE x.token = o.token AND x.authorizer = o.authorizer AND x.nonce = o.nonce AND x.chain_id = o.chain_id
    AND x.status IN ${LIVE_STATUS_LIST_SQL}
  ORDER BY ${statusRankSql("x.status")}, x.block_number, x.log_index
  LIMIT 1
);

-- Brings the orders of one (chain, token, authorizer, nonce) in line with the live events, with an
-- audit row per change. The orders are locked first, and each statement of a plpgsql function reads
-- a fresh snapshot: a void committed by another connection meanwhile is seen (the void-vs-capture race).
CREATE FUNCTION sync_orders_of(p_chain_id bigint, p_token text, p_authorizer text, p_nonce text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
  PERFORM 1 FROM orders WHERE chain_id = p_chain_id AND token = p_token AND authorizer = p_authorizer AND nonce = p_nonce FOR UPDATE;
  INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at)
  SELECT t.order_id, t.current_state, t.target_state, t.event_status,
    CASE
      WHEN t.event_kind IS NULL THEN 'event_removed'
      WHEN t.target_state = t.current_state THEN 'event_' || t.event_status
      WHEN t.target_state = 'captured' AND t.offchain_state = 'voided_offchain' THEN 'captured_after_void'
      ELSE t.target_state
    END,
    COALESCE(t.event_tx_hash, (SELECT event_tx_hash FROM orders WHERE id = t.order_id)), now_ms
  FROM order_chain_targets t
  WHERE t.chain_id = p_chain_id AND t.token = p_token AND t.authorizer = p_authorizer AND t.nonce = p_nonce
    AND (t.target_state IS DISTINCT FROM t.current_state OR t.event_status IS DISTINCT FROM t.current_status)
  ORDER BY t.order_id;
  UPDATE orders o SET state = t.target_state, event_status = t.event_status, event_tx_hash = t.event_tx_hash, updated_at = now_ms
  FROM order_chain_targets t
  WHERE t.order_id = o.id AND o.chain_id = p_chain_id AND o.token = p_token AND o.authorizer = p_authorizer AND o.nonce = p_nonce
    AND (t.target_state IS DISTINCT FROM t.current_state OR t.event_status IS DISTINCT FROM t.current_status);
END $$;

CREATE FUNCTION authorization_events_to_orders() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r authorization_events;
BEGIN
  IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
  IF TG_OP = 'UPDATE' AND OLD.status IS NOT DISTINCT FROM NEW.status THEN RETURN NULL; END IF;
  -- Most events have no order: skip the work (and the lock) then.
  IF EXISTS (SELECT 1 FROM orders WHERE chain_id = r.chain_id AND token = r.token AND authorizer = r.authorizer AND nonce = r.nonce) THEN
    PERFORM sync_orders_of(r.chain_id, r.token, r.authorizer, r.nonce);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER authorization_events_to_orders
AFTER INSERT OR DELETE OR UPDATE OF status ON authorization_events
FOR EACH ROW EXECUTE FUNCTION authorization_events_to_orders();

-- An order added after its event was indexed starts from what the chain already says.
CREATE FUNCTION orders_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at)
  VALUES (NEW.id, NULL, NEW.state, NULL, 'added', NULL, NEW.created_at);
  PERFORM sync_orders_of(NEW.chain_id, NEW.token, NEW.authorizer, NEW.nonce);
  RETURN NULL;
END $$;
CREATE TRIGGER orders_added
AFTER INSERT ON orders
FOR EACH ROW EXECUTE FUNCTION orders_added();
`;
