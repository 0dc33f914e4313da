import { LIVE_STATUS_LIST_SQL, statusRankSql } from "../../liveStatus.js";

/**
 * Schema version 3: merchant orders (signed transfer authorizations held off chain) and their audit
 * trail. Off-chain transitions (add, void, expire) are written by `src/store/orders.ts`; the
 * on-chain ones (captured, canceled, their status, and the roll-back when the event is removed or
 * dropped) by the triggers below, in the SAME transaction that stores or updates the event, so an
 * order never disagrees with the events a reader sees.
 *
 * `state` is what the order is now. `offchain_state` is the merchant's own decision (authorized or
 * voided_offchain), kept when the chain overrides it: a capture or cancel whose event later becomes
 * removed/dropped (and no other live event exists) sends the order back to it. An expired order
 * that loses its event goes back there too, and the next expiry pass expires it again.
 *
 * Every state change is checked against `order_state_transitions` (the same table as
 * ORDER_TRANSITIONS in `src/store/orders.ts`): an illegal one aborts the transaction.
 */
export const SCHEMA_V3 = /* sql */ `
CREATE TABLE orders (
  id                    INTEGER PRIMARY KEY,
  chain_id              INTEGER NOT NULL,
  token                 TEXT    NOT NULL,
  authorizer            TEXT    NOT NULL,
  payee                 TEXT    NOT NULL,
  value                 TEXT    NOT NULL,
  -- Unix seconds, as signed (the authorization is valid strictly between the two).
  valid_after           INTEGER NOT NULL,
  valid_before          INTEGER NOT NULL,
  nonce                 TEXT    NOT NULL,
  kind                  TEXT    NOT NULL CHECK (kind IN ('transfer', 'receive')),
  -- 65-byte r || s || v hex.
  signature             TEXT    NOT NULL,
  state                 TEXT    NOT NULL CHECK (state IN ('authorized', 'voided_offchain', 'captured', 'canceled', 'expired')),
  offchain_state        TEXT    NOT NULL DEFAULT 'authorized' CHECK (offchain_state IN ('authorized', 'voided_offchain')),
  -- Lifecycle status and transaction of the event behind captured/canceled; NULL in the other states.
  event_status          TEXT    CHECK (event_status IN ('preconfirmed', 'confirmed', 'finalized')),
  event_tx_hash         TEXT,
  -- The merchant voided it, the chain captured it anyway (the signature leaked or was submitted).
  voided_then_captured  INTEGER NOT NULL GENERATED ALWAYS AS (state = 'captured' AND offchain_state = 'voided_offchain') VIRTUAL,
  created_at            INTEGER NOT NULL,
  updated_at            INTEGER NOT NULL,
  UNIQUE (chain_id, token, authorizer, nonce),
  CHECK ((state IN ('captured', 'canceled')) = (event_status IS NOT NULL))
) STRICT;
CREATE INDEX orders_by_state ON orders (state, valid_before);

-- Audit trail: one row per state change, and per status change of the event behind it (from_state = to_state).
CREATE TABLE order_transitions (
  id            INTEGER PRIMARY KEY,
  order_id      INTEGER NOT NULL REFERENCES orders (id),
  from_state    TEXT,
  to_state      TEXT    NOT NULL,
  event_status  TEXT,
  cause         TEXT    NOT NULL,
  tx_hash       TEXT,
  at            INTEGER NOT NULL
) STRICT;
CREATE INDEX order_transitions_by_order ON order_transitions (order_id, id);
CREATE INDEX order_transitions_flagged ON order_transitions (id) WHERE cause = 'captured_after_void';

-- The allowed state changes (documented with ORDER_TRANSITIONS in src/authorization/orders.ts).
CREATE TABLE order_state_transitions (
  from_state  TEXT NOT NULL,
  to_state    TEXT NOT NULL,
  PRIMARY KEY (from_state, to_state)
) STRICT, WITHOUT ROWID;
INSERT INTO order_state_transitions (from_state, to_state) VALUES
  ('authorized', 'voided_offchain'),
  ('authorized', 'expired'),
  ('voided_offchain', 'expired'),
  ('authorized', 'captured'), ('voided_offchain', 'captured'), ('expired', 'captured'),
  ('authorized', 'canceled'), ('voided_offchain', 'canceled'), ('expired', 'canceled'),
  ('captured', 'canceled'), ('canceled', 'captured'),
  ('captured', 'authorized'), ('captured', 'voided_offchain'),
  ('canceled', 'authorized'), ('canceled', 'voided_offchain');

CREATE TRIGGER orders_refuse_illegal_transition
BEFORE UPDATE OF state ON orders
WHEN OLD.state IS NOT NEW.state
  AND NOT EXISTS (SELECT 1 FROM order_state_transitions WHERE from_state = OLD.state AND to_state = NEW.state)
BEGIN
  SELECT RAISE(ABORT, 'illegal order transition');
END;

-- What the live events say each order should be: the best live event ranked as in authorization_states
-- (finalized, then confirmed, then pre-confirmed; earliest first).
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
${syncTrigger("authorization_events_to_orders_insert", "AFTER INSERT ON authorization_events", "NEW")}
${syncTrigger("authorization_events_to_orders_status", "AFTER UPDATE OF status ON authorization_events WHEN OLD.status IS NOT NEW.status", "NEW")}
${syncTrigger("authorization_events_to_orders_delete", "AFTER DELETE ON authorization_events", "OLD")}

-- An order added after its event was indexed starts from what the chain already says.
CREATE TRIGGER orders_added
AFTER INSERT ON orders
BEGIN
  INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at)
  VALUES (NEW.id, NULL, NEW.state, NULL, 'added', NULL, NEW.created_at);
  ${syncStatements("NEW")}
END;
`;

/** A trigger that re-syncs the orders of the event's (chain, token, authorizer, nonce). */
function syncTrigger(name: string, when: string, row: "NEW" | "OLD"): string {
  return `CREATE TRIGGER ${name}
${when}
BEGIN
  ${syncStatements(row)}
END;`;
}

/**
 * Two statements: the audit row, then the order itself, for every order whose target differs from
 * what it holds. `row` is the trigger row carrying chain_id, token, authorizer, nonce.
 */
function syncStatements(row: "NEW" | "OLD"): string {
  const key = `t.chain_id = ${row}.chain_id AND t.token = ${row}.token AND t.authorizer = ${row}.authorizer AND t.nonce = ${row}.nonce`;
  const differs = `(t.target_state IS NOT t.current_state OR t.event_status IS NOT t.current_status)`;
  const now = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
  return `INSERT INTO order_transitions (order_id, from_state, to_state, event_status, cause, tx_hash, at)
  SELECT t.order_id, t.current_state, t.target_state, t.event_status,
    CASE
      WHEN t.event_kind IS NULL THEN 'event_removed'
      WHEN t.target_state = t.current_state THEN 'event_' || t.event_status
      WHEN t.target_state = 'captured' AND t.offchain_state = 'voided_offchain' THEN 'captured_after_void'
      ELSE t.target_state
    END,
    COALESCE(t.event_tx_hash, (SELECT event_tx_hash FROM orders WHERE id = t.order_id)), ${now}
  FROM order_chain_targets t WHERE ${key} AND ${differs};
  UPDATE orders SET (state, event_status, event_tx_hash, updated_at) = (
    SELECT t.target_state, t.event_status, t.event_tx_hash, ${now} FROM order_chain_targets t WHERE t.order_id = orders.id)
  WHERE chain_id = ${row}.chain_id AND token = ${row}.token AND authorizer = ${row}.authorizer AND nonce = ${row}.nonce
    AND EXISTS (SELECT 1 FROM order_chain_targets t WHERE t.order_id = orders.id AND ${differs});`;
}
