/**
 * Postgres schema 7, as SQLite's (src/store/schemaV7.ts, whose comment explains the events): the
 * webhook outbox tables, and triggers that write one `webhook_events` row in the SAME transaction as
 * the payment, authorization or order change that caused it.
 *
 * Note: a trigger's WHEN clause may not hold a subquery in Postgres, and a SQL function called per
 * row there costs ~4 µs (measured: +45% on a bulk insert into transfers). So a statement-level trigger
 * looks the start block up ONCE per statement (`webhook_events_from_block()`: the lowest `from_block`
 * of the active subscriptions, NULL when there is none) into a transaction-local setting, and each
 * row's WHEN compares against `current_setting(...)`: with no subscription `block_number >= NULL` is
 * not true and no trigger function runs, so a bulk backfill pays one lookup per statement. The
 * statement's snapshot is the one a per-row lookup would have read (READ COMMITTED).
 *
 * Event ids come from an identity column. Ids must grow in commit order (the sender's cursor never
 * looks back): each trigger function first takes a transaction-level advisory lock of the schema's
 * outbox, so two transactions writing events (the daemon and an `order` command, say) commit them
 * one after the other. The store's own write transactions take that lock first thing
 * (postgres/connection.ts), so they never wait for it while holding a row lock.
 */
const NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;
export const OUTBOX_LOCK_SQL = `pg_advisory_xact_lock(hashtext('flashindex:outbox:' || current_schema()))`;

const FROM_BLOCK_SETTING = "flashindex.webhook_from_block";
/** The lowest active start block as the statement trigger stored it (NULL: no subscription). */
const FROM_BLOCK = `NULLIF(current_setting('${FROM_BLOCK_SETTING}', true), '')::bigint`;

const LOG_JSON = `json_build_object('token', NEW.token, 'block_number', NEW.block_number, 'block_hash', NEW.block_hash,
      'block_timestamp', NEW.block_timestamp, 'tx_hash', NEW.tx_hash, 'tx_index', NEW.tx_index,
      'log_index', NEW.log_index, 'log_id', NEW.log_id)`;

export const POSTGRES_SCHEMA_V7 = /* sql */ `
CREATE INDEX logs_recently_removed ON logs (removed_at) WHERE removed_at IS NOT NULL;

CREATE TABLE webhook_subscriptions (
  id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url              text    NOT NULL UNIQUE,
  active           boolean NOT NULL,
  from_block       bigint  NOT NULL,
  cursor_event_id  bigint  NOT NULL,
  created_at       bigint  NOT NULL
);

CREATE TABLE webhook_events (
  id            bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  type          text    NOT NULL CHECK (type IN ('payment.preconfirmed', 'payment.confirmed', 'payment.finalized',
                  'payment.removed', 'authorization.captured', 'authorization.canceled', 'order.state_changed')),
  block_number  bigint,
  token         text    NOT NULL,
  payer         text    NOT NULL,
  payee         text,
  tx_hash       text,
  -- The JSON snapshot as text: the same bytes reach the receiver on every attempt.
  payload       text    NOT NULL,
  created_at    bigint  NOT NULL
);

CREATE TABLE webhook_deliveries (
  subscription_id  bigint  NOT NULL REFERENCES webhook_subscriptions (id),
  event_id         bigint  NOT NULL REFERENCES webhook_events (id),
  state            text    NOT NULL CHECK (state IN ('pending', 'delivered', 'parked')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  bigint  NOT NULL,
  last_error       text,
  delivered_at     bigint,
  PRIMARY KEY (subscription_id, event_id)
);
CREATE INDEX webhook_deliveries_open ON webhook_deliveries (subscription_id, event_id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_parked ON webhook_deliveries (subscription_id, event_id) WHERE state = 'parked';
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
  id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  subscription_id  bigint  NOT NULL,
  event_id         bigint  NOT NULL,
  attempt          integer NOT NULL,
  at               bigint  NOT NULL,
  duration_ms      bigint  NOT NULL,
  http_status      integer,
  error            text
);
CREATE INDEX webhook_attempts_by_event ON webhook_attempts (event_id, subscription_id);

CREATE FUNCTION webhook_events_from_block() RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT MIN(from_block) FROM webhook_subscriptions WHERE active
$$;

CREATE FUNCTION webhook_remember_from_block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('${FROM_BLOCK_SETTING}', COALESCE(webhook_events_from_block()::text, ''), true);
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_remember_from_block
BEFORE INSERT OR UPDATE ON transfers
FOR EACH STATEMENT EXECUTE FUNCTION webhook_remember_from_block();
CREATE TRIGGER webhook_remember_from_block
BEFORE INSERT ON authorization_events
FOR EACH STATEMENT EXECUTE FUNCTION webhook_remember_from_block();

CREATE FUNCTION webhook_payment_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM ${OUTBOX_LOCK_SQL};
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  VALUES (CASE NEW.status WHEN 'preconfirmed' THEN 'payment.preconfirmed' WHEN 'confirmed' THEN 'payment.confirmed'
      WHEN 'finalized' THEN 'payment.finalized' ELSE 'payment.removed' END,
    NEW.block_number, NEW.token, NEW.from_address, NEW.to_address, NEW.tx_hash,
    json_build_object('status', NEW.status, 'log', ${LOG_JSON},
      'payment', json_build_object('token', NEW.token, 'from', NEW.from_address, 'to', NEW.to_address, 'value', NEW.value::text))::text,
    ${NOW_MS});
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_payment_inserted
AFTER INSERT ON transfers
FOR EACH ROW WHEN (NEW.block_number >= ${FROM_BLOCK})
EXECUTE FUNCTION webhook_payment_event();
CREATE TRIGGER webhook_payment_status_changed
AFTER UPDATE OF status ON transfers
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.block_number >= ${FROM_BLOCK})
EXECUTE FUNCTION webhook_payment_event();

CREATE FUNCTION webhook_authorization_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM ${OUTBOX_LOCK_SQL};
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  VALUES (CASE NEW.kind WHEN 'used' THEN 'authorization.captured' ELSE 'authorization.canceled' END,
    NEW.block_number, NEW.token, NEW.authorizer, NULL, NEW.tx_hash,
    json_build_object('status', NEW.status, 'log', ${LOG_JSON},
      'authorization', json_build_object('token', NEW.token, 'authorizer', NEW.authorizer, 'nonce', NEW.nonce, 'kind', NEW.kind))::text,
    ${NOW_MS});
  RETURN NULL;
END $$;
-- Named to sort before authorization_events_to_orders (same-event triggers fire in name order): the
-- authorization's event comes before the order change it causes, as on SQLite.
CREATE TRIGGER authorization_events_outbox
AFTER INSERT ON authorization_events
FOR EACH ROW WHEN (NEW.status IN ('preconfirmed', 'confirmed', 'finalized') AND NEW.block_number >= ${FROM_BLOCK})
EXECUTE FUNCTION webhook_authorization_event();

-- Fires before the order row itself is updated (the audit row is written first): the order's own
-- columns are read from orders, the states from the transition.
CREATE FUNCTION webhook_order_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active) THEN RETURN NULL; END IF;
  PERFORM ${OUTBOX_LOCK_SQL};
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT 'order.state_changed', NULL, o.token, o.authorizer, o.payee, NEW.tx_hash,
    json_build_object('status', NEW.event_status,
      'order', json_build_object('id', o.id, 'token', o.token, 'authorizer', o.authorizer, 'payee', o.payee, 'value', o.value::text,
        'nonce', o.nonce, 'from_state', NEW.from_state, 'to_state', NEW.to_state, 'cause', NEW.cause, 'tx_hash', NEW.tx_hash,
        'voided_then_captured', NEW.to_state = 'captured' AND o.offchain_state = 'voided_offchain'))::text,
    ${NOW_MS}
  FROM orders o WHERE o.id = NEW.order_id;
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_order_state_changed
AFTER INSERT ON order_transitions
FOR EACH ROW WHEN (NEW.from_state IS NOT NULL AND NEW.from_state IS DISTINCT FROM NEW.to_state)
EXECUTE FUNCTION webhook_order_event();
`;
