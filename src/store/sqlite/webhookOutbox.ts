import type { Database } from "better-sqlite3";
import type {
  AttemptRecord,
  DeliveryListing,
  DueDelivery,
  WebhookEventRow,
  WebhookOutbox,
} from "../types.js";
import { matchWebhookTriggersToSubscriptions } from "./webhookTriggers.js";

const EVENT_COLUMNS = `e.id, e.type, e.block_number AS blockNumber, e.token, e.payer, e.payee, e.tx_hash AS txHash, e.payload, e.created_at AS createdAt`;

/**
 * The outbox on SQLite (the triggers that fill it are in schemaV7.ts; the Postgres twin is
 * postgres/webhookOutbox.ts). Synchronous work on the store's own connection, wrapped as async; each
 * write goes through `hold` (the store's: after any maintenance job, through the live-write gate), like
 * every write of that connection.
 */
export function createSqliteWebhookOutbox(
  db: Database,
  hold: <T>(work: () => T) => Promise<T>,
): WebhookOutbox {
  const sync = createSyncWebhookOutbox(db);
  return {
    syncSubscriptions: async (urls, headBlock, now) =>
      hold(() => sync.syncSubscriptions(urls, headBlock, now)),
    maxEventId: async () => sync.maxEventId(),
    eventsAfter: async (afterId, limit) => sync.eventsAfter(afterId, limit),
    cursorOf: async (subscriptionId) => sync.cursorOf(subscriptionId),
    fanOut: async (subscriptionId, matchingIds, throughId, now) =>
      hold(() => sync.fanOut(subscriptionId, matchingIds, throughId, now)),
    oldestOpen: async (subscriptionId) => sync.oldestOpen(subscriptionId),
    recordAttempt: async (attempt, outcome) => hold(() => sync.recordAttempt(attempt, outcome)),
    builderCodes: async (txHash) => sync.builderCodes(txHash),
    list: async (states, limit) => sync.list(states, limit),
    requeue: async (eventId, now) => hold(() => sync.requeue(eventId, now)),
    backlog: async () => sync.backlog(),
    prune: async (before, limit) => hold(() => sync.prune(before, limit)),
    lastAttempts: async (limit) => sync.lastAttempts(limit),
  };
}

/** Every SQL statement of the outbox on SQLite, synchronous (better-sqlite3). Each method is its own transaction. */
function createSyncWebhookOutbox(db: Database) {
  const maxEventId = db.prepare("SELECT COALESCE(MAX(id), 0) FROM webhook_events").pluck();
  const insertSubscription = db.prepare(`
    INSERT INTO webhook_subscriptions (url, active, from_block, cursor_event_id, created_at) VALUES (?, 1, ?, ?, ?)
    ON CONFLICT (url) DO UPDATE SET active = 1`);
  const subscriptionOf = db.prepare(
    "SELECT id, from_block AS fromBlock FROM webhook_subscriptions WHERE url = ?",
  );
  const deactivateAll = db.prepare("UPDATE webhook_subscriptions SET active = 0");
  const cursorOf = db
    .prepare("SELECT cursor_event_id FROM webhook_subscriptions WHERE id = ?")
    .pluck();
  const eventsAfter = db.prepare(
    `SELECT ${EVENT_COLUMNS} FROM webhook_events e WHERE e.id > ? ORDER BY e.id LIMIT ?`,
  );
  const insertDelivery = db.prepare(`
    INSERT INTO webhook_deliveries (subscription_id, event_id, state, attempts, next_attempt_at) VALUES (?, ?, 'pending', 0, ?)
    ON CONFLICT DO NOTHING`);
  const moveCursor = db.prepare(
    "UPDATE webhook_subscriptions SET cursor_event_id = ? WHERE id = ? AND cursor_event_id < ?",
  );
  const oldestOpen = db.prepare(`
    SELECT ${EVENT_COLUMNS}, d.attempts, d.next_attempt_at AS nextAttemptAt
    FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
    WHERE d.subscription_id = ? AND d.state = 'pending' ORDER BY d.event_id LIMIT 1`);
  const insertAttempt = db.prepare(`
    INSERT INTO webhook_attempts (subscription_id, event_id, attempt, at, duration_ms, http_status, error) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const settle = db.prepare(`
    UPDATE webhook_deliveries SET state = @state, attempts = @attempt, next_attempt_at = @nextAttemptAt, last_error = @error,
      delivered_at = CASE WHEN @state = 'delivered' THEN @at ELSE delivered_at END
    WHERE subscription_id = @subscriptionId AND event_id = @eventId AND state = 'pending'`);
  const codesOf = db.prepare(`
    SELECT code, role, registry FROM attribution_codes WHERE tx_hash = ? ORDER BY op_index, position`);
  const listing = db.prepare(`
    SELECT d.subscription_id AS subscriptionId, s.url, d.event_id AS eventId, e.type, d.state, d.attempts, d.last_error AS lastError,
      d.next_attempt_at AS nextAttemptAt, e.created_at AS createdAt
    FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_subscriptions s ON s.id = d.subscription_id
    WHERE d.state IN (SELECT value FROM json_each(?)) ORDER BY d.event_id DESC, d.subscription_id LIMIT ?`);
  const requeueOne = db.prepare(`
    UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE state = 'parked' AND event_id = ?`);
  const requeueAll = db.prepare(`
    UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE state = 'parked'`);
  // Each count walks a partial index: delivered rows (the bulk) are never read.
  const countPending = db
    .prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'")
    .pluck();
  const countParked = db
    .prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'parked'")
    .pluck();
  const countActive = db
    .prepare("SELECT COUNT(*) FROM webhook_subscriptions WHERE active = 1")
    .pluck();
  const lastAttempts = db.prepare(`
    SELECT a.subscription_id AS subscriptionId, a.event_id AS eventId, e.type, a.attempt, a.at, a.duration_ms AS durationMs,
      a.http_status AS httpStatus, a.error
    FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id ORDER BY a.id DESC LIMIT ?`);

  // Old events every active subscription has passed, whose deliveries (if any) all succeeded; never the newest row.
  const prunable = db
    .prepare(
      `
    SELECT e.id FROM webhook_events e
    WHERE e.id < (SELECT MAX(id) FROM webhook_events)
      AND e.id <= COALESCE((SELECT MIN(cursor_event_id) FROM webhook_subscriptions WHERE active = 1), e.id)
      AND e.created_at < ?
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state != 'delivered')
    ORDER BY e.id LIMIT ?`,
    )
    .pluck();
  const deleteAttempts = db.prepare("DELETE FROM webhook_attempts WHERE event_id = ?");
  const deleteDeliveries = db.prepare("DELETE FROM webhook_deliveries WHERE event_id = ?");
  const deleteEvent = db.prepare("DELETE FROM webhook_events WHERE id = ?");

  return {
    syncSubscriptions(
      urls: readonly string[],
      headBlock: number,
      now: number,
    ): Map<string, { id: number; fromBlock: number }> {
      return db
        .transaction(() => {
          deactivateAll.run();
          const ids = new Map<string, { id: number; fromBlock: number }>();
          const after = maxEventId.get() as number;
          for (const url of urls) {
            insertSubscription.run(url, headBlock, after, now);
            ids.set(url, subscriptionOf.get(url) as { id: number; fromBlock: number });
          }
          // The outbox's row triggers exist while a subscription is active (schema v11), from this transaction on.
          matchWebhookTriggersToSubscriptions(db);
          return ids;
        })
        .immediate();
    },

    maxEventId: () => maxEventId.get() as number,

    eventsAfter: (afterId: number, limit: number) =>
      eventsAfter.all(afterId, limit) as WebhookEventRow[],

    cursorOf: (subscriptionId: number) => cursorOf.get(subscriptionId) as number,

    fanOut(
      subscriptionId: number,
      matchingIds: readonly number[],
      throughId: number,
      now: number,
    ): void {
      db.transaction(() => {
        for (const id of matchingIds) insertDelivery.run(subscriptionId, id, now);
        moveCursor.run(throughId, subscriptionId, throughId);
      }).immediate();
    },

    oldestOpen: (subscriptionId: number) =>
      oldestOpen.get(subscriptionId) as DueDelivery | undefined,

    recordAttempt(
      attempt: AttemptRecord,
      outcome: { state: "delivered" | "pending" | "parked"; nextAttemptAt: number },
    ): void {
      db.transaction(() => {
        insertAttempt.run(
          attempt.subscriptionId,
          attempt.eventId,
          attempt.attempt,
          attempt.at,
          attempt.durationMs,
          attempt.httpStatus,
          attempt.error,
        );
        settle.run({ ...attempt, state: outcome.state, nextAttemptAt: outcome.nextAttemptAt });
      }).immediate();
    },

    builderCodes: (txHash: string) =>
      codesOf.all(txHash) as Array<{ code: string; role: string; registry: string }>,

    list: (states: ReadonlyArray<DeliveryListing["state"]>, limit: number) =>
      listing.all(JSON.stringify(states), limit) as DeliveryListing[],

    requeue: (eventId: number | "all", now: number) =>
      (eventId === "all" ? requeueAll.run(now) : requeueOne.run(now, eventId)).changes,

    backlog: () => ({
      pending: countPending.get() as number,
      parked: countParked.get() as number,
      subscriptions: countActive.get() as number,
    }),

    prune(before: number, limit: number): number {
      return db
        .transaction(() => {
          const ids = prunable.all(before, limit) as number[];
          for (const id of ids) {
            deleteAttempts.run(id);
            deleteDeliveries.run(id);
            deleteEvent.run(id);
          }
          return ids.length;
        })
        .immediate();
    },

    lastAttempts: (limit: number) =>
      lastAttempts.all(limit) as Array<AttemptRecord & { type: string }>,
  };
}
