import type { Database } from "better-sqlite3";
import { WEBHOOK_ROW_TRIGGERS } from "./schemaV7.js";
import { listTestsAsEqualities } from "./schemaV9.js";

/**
 * Schema version 11: the webhook outbox's row triggers (schemaV7.ts: an event per payment and
 * authorization change) exist only while a webhook subscription is active.
 *
 * With no active subscription their condition never held, but SQLite still ran each trigger's
 * program for every row it fired on: about 1 µs of the 7 a transfer costs the window writer, whose
 * thread sets a long backfill's pace (1,000,000 synthetic logs, three alternating runs: 13.0–13.6 s
 * with the triggers, 11.7–11.9 without). Events are exactly those the triggers wrote before: none
 * while no subscription is active, and the same rows once one is, since the triggers are created
 * (in their schema v9 form) in the transaction that activates it and dropped in the one that
 * deactivates the last (store/webhookOutbox.ts syncSubscriptions).
 */
export function matchWebhookTriggersToSubscriptions(db: Database): void {
  const active = db.prepare("SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE active = 1)").pluck().get() === 1;
  for (const trigger of WEBHOOK_ROW_TRIGGERS) {
    if (active) db.exec(listTestsAsEqualities(trigger.sql).replace(/^CREATE TRIGGER /, "CREATE TRIGGER IF NOT EXISTS "));
    else db.exec(`DROP TRIGGER IF EXISTS ${trigger.name}`);
  }
}
