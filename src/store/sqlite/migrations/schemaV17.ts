import type { Database } from "better-sqlite3";
import { rewriteTableSql } from "./schemaV12.js";

/**
 * Schema version 17: what each capture cost, and every facilitator settle's final outcome as a
 * webhook.
 *
 * - `order_captures.gas_used` and `effective_gas_price` (wei per gas, decimal text as the fee
 *   columns) come from the receipt that showed the payment, with `gas_tx_hash` the transaction it
 *   belongs to (the intent's, or one it replaced). NULL until a receipt is judged paid, and for
 *   captures before this version.
 * - `x402_settlements.block_number`: the block of the receipt a success was answered on (the
 *   pre-confirmed block's number at pre-confirmation). `settled_notified_at`: when the one
 *   `settlement.settled` event of the order was written (it is written once, whichever comes first).
 * - Webhook events `settlement.settled` (with its block) and `settlement.failed` (with why), so a
 *   merchant that held back a resource on `settlement_pending` (x402 issues #1062, #2368) can serve
 *   or refund it: written when /settle answers success or failure, and when a settle answered
 *   `settlement_pending` is resolved by the chain (its order reaches `captured`, or goes back
 *   to `authorized`, `expired` or `canceled`). A `failed` may be followed by a `settled` when a
 *   later /settle of the same payment succeeds; `settled` comes once per order.
 */
export function migrateToV17(db: Database): void {
  rewriteTableSql(
    db,
    "webhook_events",
    "type = 'order.state_changed' OR type = 'settlement.contradicted'))",
    "type = 'order.state_changed' OR type = 'settlement.contradicted' OR type = 'settlement.settled' OR type = 'settlement.failed'))",
    17,
  );
  db.exec(SCHEMA_V17);
}

const NOW_MS = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;

/** The event's payload: the order, the transaction, the outcome, its block and why it failed. */
const payload = (
  outcome: string,
  blockNumber: string,
  reason: string,
) => `json_object('settlement', json_object('order_id', o.id, 'token', o.token,
      'authorizer', o.authorizer, 'payee', o.payee, 'value', o.value, 'nonce', o.nonce, 'tx_hash', s.tx_hash, 'outcome', ${outcome},
      'block_number', ${blockNumber}, 'reason', ${reason}, 'answered_at', s.answered_at))`;

export const SCHEMA_V17 = /* sql */ `
ALTER TABLE order_captures ADD COLUMN gas_used TEXT;
ALTER TABLE order_captures ADD COLUMN effective_gas_price TEXT;
ALTER TABLE order_captures ADD COLUMN gas_tx_hash TEXT;

ALTER TABLE x402_settlements ADD COLUMN block_number INTEGER;
ALTER TABLE x402_settlements ADD COLUMN settled_notified_at INTEGER;

-- /settle answered the outcome. NEW is the row as the answer wrote it, for both triggers.
CREATE TRIGGER webhook_settlement_answered
AFTER UPDATE OF state ON x402_settlements
WHEN OLD.state IS NOT NEW.state AND (NEW.state = 'failed' OR (NEW.state = 'succeeded' AND NEW.settled_notified_at IS NULL))
  AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active = 1)
BEGIN
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT CASE WHEN s.state = 'succeeded' THEN 'settlement.settled' ELSE 'settlement.failed' END, s.block_number, o.token, o.authorizer, o.payee, s.tx_hash,
    ${payload("CASE WHEN s.state = 'succeeded' THEN 'settled' ELSE 'failed' END", "s.block_number", "CASE WHEN s.state = 'failed' THEN json_extract(s.answer, '$.errorReason') END")},
    ${NOW_MS}
  FROM x402_settlements s JOIN orders o ON o.id = s.order_id WHERE s.order_id = NEW.order_id;
END;

CREATE TRIGGER x402_settlements_settled_once
AFTER UPDATE OF state ON x402_settlements
WHEN OLD.state IS NOT NEW.state AND NEW.state = 'succeeded' AND NEW.settled_notified_at IS NULL
BEGIN
  UPDATE x402_settlements SET settled_notified_at = ${NOW_MS} WHERE order_id = NEW.order_id;
END;

-- A settle answered settlement_pending, resolved by the chain: the order leaves capturing.
CREATE TRIGGER webhook_settlement_resolved
AFTER INSERT ON order_transitions
WHEN NEW.from_state = 'capturing' AND NEW.from_state IS NOT NEW.to_state
  AND EXISTS (SELECT 1 FROM x402_settlements WHERE order_id = NEW.order_id AND state = 'pending' AND settled_notified_at IS NULL)
BEGIN
  INSERT INTO webhook_events (type, block_number, token, payer, payee, tx_hash, payload, created_at)
  SELECT CASE WHEN NEW.to_state = 'captured' THEN 'settlement.settled' ELSE 'settlement.failed' END, b.block_number, o.token, o.authorizer, o.payee,
    COALESCE(NEW.tx_hash, o.event_tx_hash, s.tx_hash),
    ${payload("CASE WHEN NEW.to_state = 'captured' THEN 'settled' ELSE 'failed' END", "b.block_number", "CASE WHEN NEW.to_state = 'captured' THEN NULL ELSE NEW.cause END")},
    ${NOW_MS}
  FROM x402_settlements s JOIN orders o ON o.id = s.order_id
  -- The transition carries the event's transaction; its log gives the block (pre-confirmed or sealed).
  LEFT JOIN (SELECT (SELECT l.block_number FROM logs l WHERE l.tx_hash = COALESCE(NEW.tx_hash, x.event_tx_hash) LIMIT 1) AS block_number
    FROM orders x WHERE x.id = NEW.order_id) b ON 1
  WHERE s.order_id = NEW.order_id AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active = 1);
  UPDATE x402_settlements SET settled_notified_at = ${NOW_MS} WHERE order_id = NEW.order_id AND NEW.to_state = 'captured';
END;
`;
