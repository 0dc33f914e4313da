import { OUTBOX_LOCK_SQL } from "../connection.js";

const NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/**
 * Postgres schema 16, as SQLite's (src/store/sqlite/migrations/schemaV16.ts): the x402
 * facilitator's settle claims and answers, the flag on a success the chain contradicted later,
 * and its webhook event `settlement.contradicted`.
 */
export const POSTGRES_SCHEMA_V16 = /* sql */ `
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type IN ('payment.preconfirmed', 'payment.confirmed',
  'payment.finalized', 'payment.removed', 'authorization.captured', 'authorization.canceled', 'order.state_changed',
  'settlement.contradicted'));

CREATE TABLE x402_settlements (
  order_id         bigint  PRIMARY KEY REFERENCES orders (id),
  state            text    NOT NULL CHECK (state IN ('settling', 'pending', 'succeeded', 'failed')),
  claim            text    NOT NULL,
  tx_hash          text,
  answer           text,
  claimed_at       bigint  NOT NULL,
  answered_at      bigint,
  contradicted_at  bigint,
  contradiction    text
);
CREATE INDEX x402_settlements_contradicted ON x402_settlements (order_id) WHERE contradicted_at IS NOT NULL;

CREATE FUNCTION x402_settlement_contradicted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE x402_settlements
  SET contradicted_at = ${NOW_MS}, contradiction = NEW.from_state || ' -> ' || NEW.to_state || ' (' || NEW.cause || ')'
  WHERE order_id = NEW.order_id AND state = 'succeeded' AND contradicted_at IS NULL;
  RETURN NULL;
END $$;
CREATE TRIGGER x402_settlements_contradicted
AFTER INSERT ON order_transitions
FOR EACH ROW WHEN (NEW.from_state IS DISTINCT FROM NEW.to_state AND NEW.to_state <> 'captured')
EXECUTE FUNCTION x402_settlement_contradicted();

CREATE FUNCTION webhook_settlement_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active) THEN RETURN NULL; END IF;
  PERFORM ${OUTBOX_LOCK_SQL};
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT 'settlement.contradicted', NULL, o.token, o.authorizer, o.payee, NEW.tx_hash,
    json_build_object('settlement', json_build_object('order_id', o.id, 'token', o.token, 'authorizer', o.authorizer,
      'payee', o.payee, 'value', o.value::text, 'nonce', o.nonce, 'tx_hash', NEW.tx_hash, 'answered_at', NEW.answered_at,
      'contradiction', NEW.contradiction))::text,
    ${NOW_MS}
  FROM orders o WHERE o.id = NEW.order_id;
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_settlement_contradicted
AFTER UPDATE OF contradicted_at ON x402_settlements
FOR EACH ROW WHEN (OLD.contradicted_at IS NULL AND NEW.contradicted_at IS NOT NULL)
EXECUTE FUNCTION webhook_settlement_event();
`;
