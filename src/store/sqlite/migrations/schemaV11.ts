/**
 * Schema version 11: the webhook outbox's row triggers (schemaV7.ts: an event per payment and
 * authorization change) exist only while a webhook subscription is active.
 *
 * With no active subscription their condition never held, but SQLite still ran each trigger's
 * program for every row it fired on: about a seventh of what a transfer costs the window writer,
 * whose thread sets a long backfill's pace (`schema-v11-no-outbox-triggers` in
 * scripts/bench/results/measurements.csv). Events are exactly those the triggers wrote before: none
 * while no subscription is active, and the same rows once one is, since the triggers are created
 * (in their schema v9 form) in the transaction that activates it and dropped in the one that
 * deactivates the last (store/sqlite/webhookOutbox.ts syncSubscriptions). The step is the store's own
 * (webhookTriggers.ts): it runs again whenever the subscriptions change.
 */

export { matchWebhookTriggersToSubscriptions } from "../webhookTriggers.js";
