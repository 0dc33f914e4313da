import type { Database } from "better-sqlite3";
import { rewriteTableSql } from "./schemaV12.js";

/**
 * Schema version 16: what the x402 facilitator answered, so that one payment gets at most one
 * success, across processes on one database and across restarts.
 *
 * - `x402_settlements`: one row per order a /settle claimed (store/settlementStore.ts). The row is
 *   created (or taken over) in one transaction by the request that wins the claim; the others are
 *   refused before they sign, reserve a relayer nonce or send anything. A success is recorded
 *   under the claim before it is answered.
 * - A success answered and later contradicted by the chain (the order leaves `captured`, or goes
 *   anywhere but `captured`: the pre-confirmed capture was dropped, reverted in its block, or the
 *   nonce ended canceled) is flagged here by a trigger in the transaction that moved the order,
 *   and raised as the webhook event `settlement.contradicted` (the CHECK of `webhook_events.type`
 *   widens by SQLite's documented procedure, as schemaV12.ts does for `orders.state`).
 */
export function migrateToV16(db: Database): void {
  rewriteTableSql(
    db,
    "webhook_events",
    "type = 'order.state_changed'))",
    "type = 'order.state_changed' OR type = 'settlement.contradicted'))",
    16,
  );
  db.exec(SCHEMA_V16);
}

const NOW_MS = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;

export const SCHEMA_V16 = /* sql */ `
CREATE TABLE x402_settlements (
  order_id         INTEGER PRIMARY KEY REFERENCES orders (id),
  state            TEXT    NOT NULL CHECK (state = 'settling' OR state = 'pending' OR state = 'succeeded' OR state = 'failed'),
  -- The random token of the request holding the claim: only it records the answer.
  claim            TEXT    NOT NULL,
  tx_hash          TEXT,
  -- The /settle body answered (JSON), given again to a payment-identifier repeat.
  answer           TEXT,
  claimed_at       INTEGER NOT NULL,
  answered_at      INTEGER,
  contradicted_at  INTEGER,
  -- '<from> -> <to> (<cause>)' of the order transition that contradicted the success.
  contradiction    TEXT
) STRICT;
CREATE INDEX x402_settlements_contradicted ON x402_settlements (order_id) WHERE contradicted_at IS NOT NULL;

CREATE TRIGGER x402_settlements_contradicted
AFTER INSERT ON order_transitions
WHEN NEW.from_state IS NOT NEW.to_state AND NEW.to_state <> 'captured'
BEGIN
  UPDATE x402_settlements
  SET contradicted_at = ${NOW_MS}, contradiction = NEW.from_state || ' -> ' || NEW.to_state || ' (' || NEW.cause || ')'
  WHERE order_id = NEW.order_id AND state = 'succeeded' AND contradicted_at IS NULL;
END;

CREATE TRIGGER webhook_settlement_contradicted
AFTER UPDATE OF contradicted_at ON x402_settlements
WHEN OLD.contradicted_at IS NULL AND NEW.contradicted_at IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active = 1)
BEGIN
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT 'settlement.contradicted', NULL, o.token, o.authorizer, o.payee, NEW.tx_hash,
    json_object('settlement', json_object('order_id', o.id, 'token', o.token, 'authorizer', o.authorizer, 'payee', o.payee,
      'value', o.value, 'nonce', o.nonce, 'tx_hash', NEW.tx_hash, 'answered_at', NEW.answered_at,
      'contradiction', NEW.contradiction)),
    ${NOW_MS}
  FROM orders o WHERE o.id = NEW.order_id;
END;
`;
