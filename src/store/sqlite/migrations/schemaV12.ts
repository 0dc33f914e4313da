import type { Database } from "better-sqlite3";
import { FatalError } from "../../../errors/base.js";
import { orderChainTargetsView } from "../../orderChainTargetsView.js";

/**
 * Schema version 12: the capture relay (`order capture`, the x402 facilitator's settle).
 *
 * - `orders.state` admits `capturing`: the relay signed a transaction for the order and stored it
 *   with its intent, in the transaction that moved the order there, before anything was sent. A
 *   crash at any later point finds the same bytes to send again: one authorization, one relayer
 *   nonce, so at most one transaction of it can land.
 * - `orders.source`: `merchant` (order add) or `x402` (a payment the facilitator settled).
 * - `order_captures`: the intent (relayer, nonce, signed bytes, fees, the transactions it replaced).
 *   It stays `sent` until the order's event is finalized or the order expires (trigger below), so
 *   a capture whose event is removed or dropped goes back to `capturing` rather than `authorized`,
 *   and the daemon sends it again.
 * - `x402_payment_ids`: the payment-identifier extension's ids, bound to the payload they came with.
 *
 * The CHECK of `orders.state` changes by SQLite's documented procedure for a CHECK constraint (as
 * in schemaV9.ts): the stored rows already satisfy the wider one.
 */
export function migrateToV12(db: Database): void {
  rewriteTableSql(
    db,
    "orders",
    "state = 'expired'))",
    "state = 'expired' OR state = 'capturing'))",
  );
  db.exec(SCHEMA_V12);
}

/** Every state an order's capture can follow; the view's rule for a removed event reads `status = 'sent'`. */
export const SCHEMA_V12 = /* sql */ `
ALTER TABLE orders ADD COLUMN source TEXT NOT NULL DEFAULT 'merchant' CHECK (source = 'merchant' OR source = 'x402');

CREATE TABLE order_captures (
  order_id                  INTEGER PRIMARY KEY REFERENCES orders (id),
  relayer                   TEXT    NOT NULL,
  relayer_nonce             INTEGER NOT NULL,
  tx_hash                   TEXT    NOT NULL,
  -- The signed transaction, as sent (and sent again after a crash or a drop).
  raw_tx                    TEXT    NOT NULL,
  -- Wei, decimal.
  max_fee_per_gas           TEXT    NOT NULL,
  max_priority_fee_per_gas  TEXT    NOT NULL,
  -- JSON array of the transaction hashes this one replaced (same relayer nonce), oldest first.
  replaced_tx_hashes        TEXT    NOT NULL DEFAULT '[]',
  status                    TEXT    NOT NULL DEFAULT 'sent'
    CHECK (status = 'sent' OR status = 'landed' OR status = 'canceled' OR status = 'expired' OR status = 'abandoned'),
  broadcasts                INTEGER NOT NULL DEFAULT 0,
  last_broadcast_at         INTEGER,
  created_at                INTEGER NOT NULL,
  updated_at                INTEGER NOT NULL
) STRICT;
CREATE INDEX order_captures_sent ON order_captures (order_id) WHERE status = 'sent';
CREATE INDEX order_captures_by_tx ON order_captures (tx_hash);

CREATE TABLE x402_payment_ids (
  payment_id   TEXT    PRIMARY KEY,
  -- Hash of the payment payload and requirements it first came with.
  fingerprint  TEXT    NOT NULL,
  order_id     INTEGER NOT NULL REFERENCES orders (id),
  created_at   INTEGER NOT NULL
) STRICT;

INSERT INTO order_state_transitions (from_state, to_state) VALUES
  ('authorized', 'capturing'), ('capturing', 'authorized'), ('capturing', 'expired'),
  ('capturing', 'captured'), ('capturing', 'canceled'),
  ('captured', 'capturing'), ('canceled', 'capturing');

DROP VIEW order_chain_targets;
${orderChainTargetsView("CREATE VIEW")}

-- The intent ends with the order: finalized event, or expiry. Until then a removed event sends the order back to capturing.
CREATE TRIGGER order_captures_follow_order
AFTER UPDATE OF state, event_status ON orders
WHEN NEW.state IS NOT OLD.state OR NEW.event_status IS NOT OLD.event_status
BEGIN
  UPDATE order_captures SET
    status = CASE
      WHEN NEW.state = 'expired' THEN 'expired'
      WHEN NEW.state = 'captured' AND NEW.event_status = 'finalized' THEN 'landed'
      WHEN NEW.state = 'canceled' AND NEW.event_status = 'finalized' THEN 'canceled'
      ELSE status END,
    updated_at = CAST(unixepoch('subsec') * 1000 AS INTEGER)
  WHERE order_id = NEW.id AND status = 'sent'
    AND (NEW.state = 'expired' OR NEW.event_status = 'finalized');
END;
`;

/** Replaces `from` (which must occur exactly once) by `to` in a table's stored definition. */
export function rewriteTableSql(
  db: Database,
  table: string,
  from: string,
  to: string,
  step = 12,
): void {
  const sql = db
    .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?")
    .pluck()
    .get(table) as string | undefined;
  if (sql === undefined || sql.split(from).length !== 2)
    throw new FatalError(
      `Schema step ${step}: the definition of table ${table} is not the one expected; nothing was changed`,
    );
  const version = db.pragma("schema_version", { simple: true }) as number;
  // better-sqlite3 runs in SQLite's defensive mode, which refuses writes to sqlite_master.
  db.unsafeMode(true);
  try {
    db.pragma("writable_schema = ON");
    db.prepare("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?").run(
      sql.replace(from, to),
      table,
    );
    db.pragma(`schema_version = ${version + 1}`);
  } finally {
    db.pragma("writable_schema = OFF");
    db.unsafeMode(false);
  }
  // Parsed again now: a definition SQLite could not read would fail here, inside the step's transaction.
  db.prepare(`SELECT * FROM "${table}" LIMIT 0`).all();
}
