import type { Database } from "better-sqlite3";
import { rewriteTableSql } from "./schemaV12.js";

/**
 * Schema version 15: one relayer, one nonce book; the cancel's own order state.
 *
 * - `relayer_nonces`: every transaction nonce flashindex hands out per relayer key (capture, x402
 *   settle, cancel relay, gap filler), across processes on this database. A nonce is reserved in a
 *   write transaction (store/nonceBook.ts); its holder and state (reserved, signed, broadcast,
 *   landed, released) say who may send with it. A nonce released before anything was broadcast
 *   with it is handed out again before a new one, so a refused or duplicate send leaves no gap.
 * - `order_captures.owner`: the process that stored the intent; `send_started_at`: unix ms when a
 *   process first committed to broadcasting its bytes (written before the send). An x402 intent
 *   that no send was started for is abandoned after a crash rather than broadcast (docs/x402.md).
 * - `orders.state` admits `canceling`: `flashindex cancel` moves a stored order there in the
 *   transaction that accepts the cancel, before anything is sent; capture and settle refuse it.
 */
export function migrateToV15(db: Database): void {
  rewriteTableSql(
    db,
    "orders",
    "state = 'expired' OR state = 'capturing'))",
    "state = 'expired' OR state = 'capturing' OR state = 'canceling'))",
    15,
  );
  db.exec(SCHEMA_V15);
}

export const SCHEMA_V15 = /* sql */ `
CREATE TABLE relayer_nonces (
  chain_id    INTEGER NOT NULL,
  relayer     TEXT    NOT NULL,
  nonce       INTEGER NOT NULL,
  -- capture:<order id>, cancel:<token>:<authorizer>:<nonce>, or gap_filler.
  holder      TEXT    NOT NULL,
  -- The process that reserved it (host:pid:random).
  owner       TEXT    NOT NULL,
  state       TEXT    NOT NULL
    CHECK (state = 'reserved' OR state = 'signed' OR state = 'broadcast' OR state = 'landed' OR state = 'released'),
  tx_hash     TEXT,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (chain_id, relayer, nonce)
) STRICT;

ALTER TABLE order_captures ADD COLUMN owner TEXT;
ALTER TABLE order_captures ADD COLUMN send_started_at INTEGER;
-- Intents stored before this version were sent by the relay of their time, which sent right after storing.
UPDATE order_captures SET send_started_at = created_at;

INSERT INTO order_state_transitions (from_state, to_state) VALUES
  ('authorized', 'canceling'), ('voided_offchain', 'canceling'), ('expired', 'canceling'),
  ('canceling', 'authorized'), ('canceling', 'voided_offchain'), ('canceling', 'expired'),
  ('canceling', 'canceled'), ('canceling', 'captured');
`;
