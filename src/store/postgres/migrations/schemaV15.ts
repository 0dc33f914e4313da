/**
 * Postgres schema 15, as SQLite's (src/store/sqlite/migrations/schemaV15.ts): the relayers' nonce
 * book, the capture intent's owner and send start, and the `canceling` order state.
 */
export const POSTGRES_SCHEMA_V15 = /* sql */ `
ALTER TABLE orders DROP CONSTRAINT orders_state_check;
ALTER TABLE orders ADD CONSTRAINT orders_state_check
  CHECK (state IN ('authorized', 'voided_offchain', 'capturing', 'canceling', 'captured', 'canceled', 'expired'));

CREATE TABLE relayer_nonces (
  chain_id    bigint  NOT NULL,
  relayer     text    NOT NULL,
  nonce       bigint  NOT NULL,
  holder      text    NOT NULL,
  owner       text    NOT NULL,
  state       text    NOT NULL CHECK (state IN ('reserved', 'signed', 'broadcast', 'landed', 'released')),
  tx_hash     text,
  created_at  bigint  NOT NULL,
  updated_at  bigint  NOT NULL,
  PRIMARY KEY (chain_id, relayer, nonce)
);

ALTER TABLE order_captures ADD COLUMN owner text;
ALTER TABLE order_captures ADD COLUMN send_started_at bigint;
UPDATE order_captures SET send_started_at = created_at;

INSERT INTO order_state_transitions (from_state, to_state) VALUES
  ('authorized', 'canceling'), ('voided_offchain', 'canceling'), ('expired', 'canceling'),
  ('canceling', 'authorized'), ('canceling', 'voided_offchain'), ('canceling', 'expired'),
  ('canceling', 'canceled'), ('canceling', 'captured');
`;
