import type { Database } from "better-sqlite3";
import { listTestsAsEqualities } from "./listTestsAsEqualities.js";

/*
 * The webhook outbox's row triggers on SQLite. Schema 7 created them; since schema 11 they exist only
 * while a subscription is active, so the store creates and drops them at run time from these
 * definitions (in their schema 9 form: list tests as equalities).
 */

/** Now as unix milliseconds, in SQL. */
export const NOW_MS_SQL = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`;
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
    ${NOW_MS_SQL});`;
}

/**
 * The outbox's row triggers: an event per payment and authorization change. Since schema v11 they
 * exist only while a webhook subscription is active (migrations/schemaV11.ts), created from these definitions.
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
    ${NOW_MS_SQL});
END;`,
  },
];

/** Creates the row triggers when a subscription is active, drops them when none is (schema 11's rule). */
export function matchWebhookTriggersToSubscriptions(db: Database): void {
  const active =
    db
      .prepare("SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active = 1)")
      .pluck()
      .get() === 1;
  for (const trigger of WEBHOOK_ROW_TRIGGERS) {
    if (active)
      db.exec(
        listTestsAsEqualities(trigger.sql).replace(
          /^CREATE TRIGGER /,
          "CREATE TRIGGER IF NOT EXISTS ",
        ),
      );
    else db.exec(`DROP TRIGGER IF EXISTS ${trigger.name}`);
  }
}
