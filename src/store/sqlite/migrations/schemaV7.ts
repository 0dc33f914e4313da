/**
 * Schema version 7: the webhook outbox. Triggers write one `webhook_events` row for every payment,
 * authorization and order change a merchant may subscribe to, in the SAME transaction as the row
 * that caused it: a crash can neither lose an event nor leave one for a rolled-back row. The sender
 * (src/webhooks/) fans events out to `webhook_deliveries` per subscription and records every attempt.
 *
 * Bulk backfill: a payment or authorization event is written only for a block at or after the lowest
 * `from_block` of the active subscriptions (the chain head when the subscription was first seen).
 * With no subscription nothing is written (and since schema 11 the payment and authorization
 * triggers do not exist then: schemaV11.ts); a historical backfill below the head writes no events
 * either. Blocks the daemon catches up on after a
 * restart are above `from_block`, so a merchant misses nothing that happened while it was down.
 *
 * Event types (the `status` in the payload tells `removed` from `dropped`):
 *   transfers insert / status change -> payment.preconfirmed | payment.confirmed | payment.finalized | payment.removed
 *   authorization_events insert (live) -> authorization.captured | authorization.canceled
 *   order_transitions insert with a state change -> order.state_changed
 *
 * The Postgres twin is src/store/postgres/schemaV7.ts (plpgsql functions run `FOR EACH ROW WHEN
 * (...)`; its WHEN cannot hold this file's subquery, see there).
 */
const NOW_MS = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
const ACTIVE_FROM_BLOCK = `(SELECT MIN(from_block) FROM webhook_subscriptions WHERE active = 1)`;

function logJson(row: "NEW"): string {
  return `json_object('token', ${row}.token, 'block_number', ${row}.block_number, 'block_hash', ${row}.block_hash,
      'block_timestamp', ${row}.block_timestamp, 'tx_hash', ${row}.tx_hash, 'tx_index', ${row}.tx_index,
      'log_index', ${row}.log_index, 'log_id', ${row}.log_id)`;
}

const PAYMENT_TYPE = `CASE NEW.status WHEN 'preconfirmed' THEN 'payment.preconfirmed' WHEN 'confirmed' THEN 'payment.confirmed'
    WHEN 'finalized' THEN 'payment.finalized' ELSE 'payment.removed' END`;

function paymentInsert(): string {
  return `INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  VALUES (${PAYMENT_TYPE}, NEW.block_number, NEW.token, NEW.from_address, NEW.to_address, NEW.tx_hash,
    json_object('status', NEW.status, 'log', ${logJson("NEW")},
      'payment', json_object('token', NEW.token, 'from', NEW.from_address, 'to', NEW.to_address, 'value', NEW.value)),
    ${NOW_MS});`;
}

/**
 * The outbox's row triggers: an event per payment and authorization change. Since schema v11 they
 * exist only while a webhook subscription is active (schemaV11.ts), created from these definitions.
 */
export const WEBHOOK_ROW_TRIGGERS: ReadonlyArray<{ name: string; sql: string }> = [
  {
    name: "webhook_payment_inserted",
    sql: /* sql */ `CREATE TRIGGER webhook_payment_inserted
AFTER INSERT ON transfers
WHEN NEW.block_number >= ${ACTIVE_FROM_BLOCK}
BEGIN
  ${paymentInsert()}
END;`,
  },
  {
    name: "webhook_payment_status_changed",
    sql: /* sql */ `CREATE TRIGGER webhook_payment_status_changed
AFTER UPDATE OF status ON transfers
WHEN OLD.status IS NOT NEW.status AND NEW.block_number >= ${ACTIVE_FROM_BLOCK}
BEGIN
  ${paymentInsert()}
END;`,
  },
  {
    name: "webhook_authorization_inserted",
    sql: /* sql */ `CREATE TRIGGER webhook_authorization_inserted
AFTER INSERT ON authorization_events
WHEN NEW.status IN ('preconfirmed', 'confirmed', 'finalized') AND NEW.block_number >= ${ACTIVE_FROM_BLOCK}
BEGIN
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  VALUES (CASE NEW.kind WHEN 'used' THEN 'authorization.captured' ELSE 'authorization.canceled' END,
    NEW.block_number, NEW.token, NEW.authorizer, NULL, NEW.tx_hash,
    json_object('status', NEW.status, 'log', ${logJson("NEW")},
      'authorization', json_object('token', NEW.token, 'authorizer', NEW.authorizer, 'nonce', NEW.nonce, 'kind', NEW.kind)),
    ${NOW_MS});
END;`,
  },
];

export const SCHEMA_V7 = /* sql */ `
-- The status page's "recently removed or dropped" list (removed_at is set exactly while a log is removed
-- or dropped); a partial index, so the bulk of live rows costs nothing.
CREATE INDEX logs_recently_removed ON logs (removed_at) WHERE removed_at IS NOT NULL;

-- One row per webhook URL ever configured. Inactive ones (no longer in the config) get no new events.
CREATE TABLE webhook_subscriptions (
  id               INTEGER PRIMARY KEY,
  url              TEXT    NOT NULL UNIQUE,
  active           INTEGER NOT NULL CHECK (active IN (0, 1)),
  -- Payment and authorization events start at this block: the chain head when first seen.
  from_block       INTEGER NOT NULL,
  -- Every event up to this id has been fanned out to webhook_deliveries (or did not match the filter).
  cursor_event_id  INTEGER NOT NULL,
  created_at       INTEGER NOT NULL
) STRICT;

-- The outbox. payload is the JSON snapshot of the row at the time of the change; its id is the
-- event's stable id (the idempotency header carries it). Ids grow in commit order (writers are
-- serialized); pruning never deletes the newest row, so an id is never handed out twice.
CREATE TABLE webhook_events (
  id            INTEGER PRIMARY KEY,
  type          TEXT    NOT NULL CHECK (type IN ('payment.preconfirmed', 'payment.confirmed', 'payment.finalized',
                  'payment.removed', 'authorization.captured', 'authorization.canceled', 'order.state_changed')),
  -- NULL for order events (not tied to a block).
  block_number  INTEGER,
  token         TEXT    NOT NULL,
  -- What a subscription's address filter matches: payer/authorizer and payee.
  payer         TEXT    NOT NULL,
  payee         TEXT,
  tx_hash       TEXT,
  payload       TEXT    NOT NULL,
  created_at    INTEGER NOT NULL
) STRICT;

-- One row per (subscription, event) that matched its filter: pending until a 2xx (delivered) or
-- the last attempt (parked, the dead letter). Delivered in event order per subscription.
CREATE TABLE webhook_deliveries (
  subscription_id  INTEGER NOT NULL REFERENCES webhook_subscriptions (id),
  event_id         INTEGER NOT NULL REFERENCES webhook_events (id),
  state            TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'parked')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER NOT NULL,
  last_error       TEXT,
  delivered_at     INTEGER,
  PRIMARY KEY (subscription_id, event_id)
) STRICT;
CREATE INDEX webhook_deliveries_open ON webhook_deliveries (subscription_id, event_id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_parked ON webhook_deliveries (subscription_id, event_id) WHERE state = 'parked';
-- Pruning works event by event (src/store/webhookOutbox.ts prune).
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

-- Every attempt: HTTP status (NULL when no answer) or the error.
CREATE TABLE webhook_attempts (
  id               INTEGER PRIMARY KEY,
  subscription_id  INTEGER NOT NULL,
  event_id         INTEGER NOT NULL,
  attempt          INTEGER NOT NULL,
  at               INTEGER NOT NULL,
  duration_ms      INTEGER NOT NULL,
  http_status      INTEGER,
  error            TEXT
) STRICT;
CREATE INDEX webhook_attempts_by_event ON webhook_attempts (event_id, subscription_id);

${WEBHOOK_ROW_TRIGGERS.map((trigger) => trigger.sql).join("\n\n")}

-- Runs before the order row itself is updated (schema v3 writes the audit row first): the order's
-- own columns are read from orders, the states from the transition.
CREATE TRIGGER webhook_order_state_changed
AFTER INSERT ON order_transitions
WHEN NEW.from_state IS NOT NULL AND NEW.from_state IS NOT NEW.to_state
  AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active = 1)
BEGIN
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT 'order.state_changed', NULL, o.token, o.authorizer, o.payee, NEW.tx_hash,
    json_object('status', NEW.event_status,
      'order', json_object('id', o.id, 'token', o.token, 'authorizer', o.authorizer, 'payee', o.payee, 'value', o.value,
        'nonce', o.nonce, 'from_state', NEW.from_state, 'to_state', NEW.to_state, 'cause', NEW.cause, 'tx_hash', NEW.tx_hash,
        'voided_then_captured', json(CASE WHEN NEW.to_state = 'captured' AND o.offchain_state = 'voided_offchain' THEN 'true' ELSE 'false' END))),
    ${NOW_MS}
  FROM orders o WHERE o.id = NEW.order_id;
END;
`;
