import { OUTBOX_LOCK_SQL } from "../connection.js";

const NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/** The event's payload, as SQLite's (value as text: numeric would lose digits in JSON readers). */
const payload = (
  outcome: string,
  blockNumber: string,
  reason: string,
) => `json_build_object('settlement', json_build_object('order_id', o.id,
      'token', o.token, 'authorizer', o.authorizer, 'payee', o.payee, 'value', o.value::text, 'nonce', o.nonce, 'tx_hash', s.tx_hash,
      'outcome', ${outcome}, 'block_number', ${blockNumber}, 'reason', ${reason}, 'answered_at', s.answered_at))::text`;

/**
 * Postgres schema 17, as SQLite's (src/store/sqlite/migrations/schemaV17.ts): each capture's gas
 * used and effective gas price; every facilitator settle's final outcome as the webhook events
 * `settlement.settled` and `settlement.failed`.
 */
export const POSTGRES_SCHEMA_V17 = /* sql */ `
ALTER TABLE order_captures ADD COLUMN gas_used numeric(78, 0);
ALTER TABLE order_captures ADD COLUMN effective_gas_price numeric(78, 0);
ALTER TABLE order_captures ADD COLUMN gas_tx_hash text;

ALTER TABLE x402_settlements ADD COLUMN block_number bigint;
ALTER TABLE x402_settlements ADD COLUMN settled_notified_at bigint;

ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_type_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_type_check CHECK (type IN ('payment.preconfirmed', 'payment.confirmed',
  'payment.finalized', 'payment.removed', 'authorization.captured', 'authorization.canceled', 'order.state_changed',
  'settlement.contradicted', 'settlement.settled', 'settlement.failed'));

-- /settle answered the outcome: one settled per order, a failed per failed answer.
CREATE FUNCTION webhook_settlement_answered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'succeeded' THEN
    UPDATE x402_settlements SET settled_notified_at = ${NOW_MS} WHERE order_id = NEW.order_id;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active) THEN RETURN NULL; END IF;
  PERFORM ${OUTBOX_LOCK_SQL};
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT CASE WHEN s.state = 'succeeded' THEN 'settlement.settled' ELSE 'settlement.failed' END, s.block_number, o.token, o.authorizer, o.payee, s.tx_hash,
    ${payload("CASE WHEN s.state = 'succeeded' THEN 'settled' ELSE 'failed' END", "s.block_number", "CASE WHEN s.state = 'failed' THEN s.answer::json ->> 'errorReason' END")},
    ${NOW_MS}
  FROM x402_settlements s JOIN orders o ON o.id = s.order_id WHERE s.order_id = NEW.order_id;
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_settlement_answered
AFTER UPDATE OF state ON x402_settlements
FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state AND (NEW.state = 'failed' OR (NEW.state = 'succeeded' AND NEW.settled_notified_at IS NULL)))
EXECUTE FUNCTION webhook_settlement_answered();

-- A settle answered settlement_pending, resolved by the chain: the order leaves capturing.
CREATE FUNCTION webhook_settlement_resolved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM x402_settlements WHERE order_id = NEW.order_id AND state = 'pending' AND settled_notified_at IS NULL) THEN RETURN NULL; END IF;
  IF EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active) THEN
    PERFORM ${OUTBOX_LOCK_SQL};
    INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
    SELECT CASE WHEN NEW.to_state = 'captured' THEN 'settlement.settled' ELSE 'settlement.failed' END, b.block_number, o.token, o.authorizer, o.payee,
      COALESCE(NEW.tx_hash, o.event_tx_hash, s.tx_hash),
      ${payload("CASE WHEN NEW.to_state = 'captured' THEN 'settled' ELSE 'failed' END", "b.block_number", "CASE WHEN NEW.to_state = 'captured' THEN NULL ELSE NEW.cause END")},
      ${NOW_MS}
    FROM x402_settlements s JOIN orders o ON o.id = s.order_id
    LEFT JOIN LATERAL (SELECT l.block_number FROM logs l WHERE l.tx_hash = COALESCE(NEW.tx_hash, o.event_tx_hash) LIMIT 1) b ON true
    WHERE s.order_id = NEW.order_id;
  END IF;
  IF NEW.to_state = 'captured' THEN
    UPDATE x402_settlements SET settled_notified_at = ${NOW_MS} WHERE order_id = NEW.order_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_settlement_resolved
AFTER INSERT ON order_transitions
FOR EACH ROW WHEN (NEW.from_state = 'capturing' AND NEW.from_state IS DISTINCT FROM NEW.to_state)
EXECUTE FUNCTION webhook_settlement_resolved();
`;
