import { orderChainTargetsView } from "../../orderChainTargetsView.js";

/**
 * Postgres schema 12, as SQLite's (src/store/sqlite/migrations/schemaV12.ts): the `capturing` state, `orders.source`,
 * the capture relay's intents, the x402 payment identifiers, and the view that sends an order whose
 * event is gone back to `capturing` while its intent is live.
 */
export const POSTGRES_SCHEMA_V12 = /* sql */ `
ALTER TABLE orders DROP CONSTRAINT orders_state_check;
ALTER TABLE orders ADD CONSTRAINT orders_state_check
  CHECK (state IN ('authorized', 'voided_offchain', 'capturing', 'captured', 'canceled', 'expired'));
ALTER TABLE orders ADD COLUMN source text NOT NULL DEFAULT 'merchant' CHECK (source IN ('merchant', 'x402'));

CREATE TABLE order_captures (
  order_id                  bigint  PRIMARY KEY REFERENCES orders (id),
  relayer                   text    NOT NULL,
  relayer_nonce             bigint  NOT NULL,
  tx_hash                   text    NOT NULL,
  raw_tx                    text    NOT NULL,
  max_fee_per_gas           numeric(78, 0) NOT NULL,
  max_priority_fee_per_gas  numeric(78, 0) NOT NULL,
  replaced_tx_hashes        text    NOT NULL DEFAULT '[]',
  status                    text    NOT NULL DEFAULT 'sent' CHECK (status IN ('sent', 'landed', 'canceled', 'expired', 'abandoned')),
  broadcasts                integer NOT NULL DEFAULT 0,
  last_broadcast_at         bigint,
  created_at                bigint  NOT NULL,
  updated_at                bigint  NOT NULL
);
CREATE INDEX order_captures_sent ON order_captures (order_id) WHERE status = 'sent';
CREATE INDEX order_captures_by_tx ON order_captures (tx_hash);

CREATE TABLE x402_payment_ids (
  payment_id   text    PRIMARY KEY,
  fingerprint  text    NOT NULL,
  order_id     bigint  NOT NULL REFERENCES orders (id),
  created_at   bigint  NOT NULL
);

INSERT INTO order_state_transitions (from_state, to_state) VALUES
  ('authorized', 'capturing'), ('capturing', 'authorized'), ('capturing', 'expired'),
  ('capturing', 'captured'), ('capturing', 'canceled'),
  ('captured', 'capturing'), ('canceled', 'capturing');

${orderChainTargetsView("CREATE OR REPLACE VIEW")}

CREATE FUNCTION order_captures_follow_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.state IS DISTINCT FROM OLD.state OR NEW.event_status IS DISTINCT FROM OLD.event_status)
    AND (NEW.state = 'expired' OR NEW.event_status = 'finalized') THEN
    UPDATE order_captures SET
      status = CASE
        WHEN NEW.state = 'expired' THEN 'expired'
        WHEN NEW.state = 'captured' THEN 'landed'
        WHEN NEW.state = 'canceled' THEN 'canceled'
        ELSE status END,
      updated_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    WHERE order_id = NEW.id AND status = 'sent';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER order_captures_follow_order
AFTER UPDATE OF state, event_status ON orders
FOR EACH ROW EXECUTE FUNCTION order_captures_follow_order();
`;
