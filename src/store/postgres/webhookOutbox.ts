import type pg from "pg";
import type {
  AttemptRecord,
  DeliveryListing,
  DueDelivery,
  WebhookEventRow,
  WebhookOutbox,
} from "../types.js";
import { inTransaction } from "./connection.js";
import { asPostgresError } from "./postgresErrors.js";

const EVENT_COLUMNS = `e.id, e.type, e.block_number AS "blockNumber", e.token, e.payer, e.payee, e.tx_hash AS "txHash", e.payload, e.created_at AS "createdAt"`;

/**
 * The webhook outbox on Postgres: the statements of src/store/webhookOutbox.ts (SQLite) in Postgres'
 * dialect, over the store's pool. The sender's own transactions write no events, so they do not take
 * the outbox lock (schemaV7.ts) and never wait behind a backfill window.
 */
export function createPostgresWebhookOutbox(deps: {
  pool: pg.Pool;
  read: <T>(work: (client: pg.ClientBase) => Promise<T>) => Promise<T>;
  location: string;
  /** Runs first in each write transaction (the writer epoch's check). */
  guard?: ((client: pg.PoolClient) => Promise<void>) | undefined;
}): WebhookOutbox {
  const { pool, read } = deps;
  const rows = <T>(sql: string, params: unknown[] = []) =>
    read(async (c) => (await c.query(sql, params)).rows as T[]);
  const transaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    try {
      return await inTransaction(pool, work, { guard: deps.guard });
    } catch (error) {
      throw asPostgresError(error, deps.location);
    }
  };
  const maxEventId = async (c: pg.ClientBase) =>
    Number((await c.query("SELECT COALESCE(MAX(id), 0) AS id FROM webhook_events")).rows[0].id);

  return {
    syncSubscriptions: (urls, headBlock, now) =>
      transaction(async (c) => {
        await c.query("UPDATE webhook_subscriptions SET active = false");
        const ids = new Map<string, { id: number; fromBlock: number }>();
        const after = await maxEventId(c);
        for (const url of urls) {
          const {
            rows: [row],
          } = await c.query(
            `INSERT INTO webhook_subscriptions (url, active, from_block, cursor_event_id, created_at) VALUES ($1, true, $2, $3, $4)
             ON CONFLICT (url) DO UPDATE SET active = true RETURNING id, from_block AS "fromBlock"`,
            [url, headBlock, after, now],
          );
          ids.set(url, row as { id: number; fromBlock: number });
        }
        return ids;
      }),

    maxEventId: () => read(maxEventId),
    eventsAfter: (afterId, limit) =>
      rows<WebhookEventRow>(
        `SELECT ${EVENT_COLUMNS} FROM webhook_events e WHERE e.id > $1 ORDER BY e.id LIMIT $2`,
        [afterId, limit],
      ),
    cursorOf: async (subscriptionId) =>
      Number(
        (
          await rows<{ cursor: number }>(
            "SELECT cursor_event_id AS cursor FROM webhook_subscriptions WHERE id = $1",
            [subscriptionId],
          )
        )[0]?.cursor,
      ),

    fanOut: (subscriptionId, matchingIds, throughId, now) =>
      transaction(async (c) => {
        if (matchingIds.length > 0)
          await c.query(
            `INSERT INTO webhook_deliveries (subscription_id, event_id, state, attempts, next_attempt_at)
             SELECT $1, id, 'pending', 0, $3 FROM unnest($2::bigint[]) AS id ON CONFLICT DO NOTHING`,
            [subscriptionId, matchingIds, now],
          );
        await c.query(
          "UPDATE webhook_subscriptions SET cursor_event_id = $1 WHERE id = $2 AND cursor_event_id < $1",
          [throughId, subscriptionId],
        );
      }),

    oldestOpen: async (subscriptionId) =>
      (
        await rows<DueDelivery>(
          `SELECT ${EVENT_COLUMNS}, d.attempts, d.next_attempt_at AS "nextAttemptAt"
           FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
           WHERE d.subscription_id = $1 AND d.state = 'pending' ORDER BY d.event_id LIMIT 1`,
          [subscriptionId],
        )
      )[0],

    recordAttempt: (a: AttemptRecord, outcome) =>
      transaction(async (c) => {
        await c.query(
          "INSERT INTO webhook_attempts (subscription_id, event_id, attempt, at, duration_ms, http_status, error) VALUES ($1, $2, $3, $4, $5, $6, $7)",
          [a.subscriptionId, a.eventId, a.attempt, a.at, a.durationMs, a.httpStatus, a.error],
        );
        await c.query(
          `UPDATE webhook_deliveries SET state = $1, attempts = $2, next_attempt_at = $3, last_error = $4,
             delivered_at = CASE WHEN $1 = 'delivered' THEN $5 ELSE delivered_at END
           WHERE subscription_id = $6 AND event_id = $7 AND state = 'pending'`,
          [
            outcome.state,
            a.attempt,
            outcome.nextAttemptAt,
            a.error,
            a.at,
            a.subscriptionId,
            a.eventId,
          ],
        );
      }),

    builderCodes: (txHash) =>
      rows(
        "SELECT code, role, registry FROM attribution_codes WHERE tx_hash = $1 ORDER BY op_index, position",
        [txHash],
      ),

    list: (states, limit) =>
      rows<DeliveryListing>(
        `SELECT d.subscription_id AS "subscriptionId", s.url, d.event_id AS "eventId", e.type, d.state, d.attempts, d.last_error AS "lastError",
           d.next_attempt_at AS "nextAttemptAt", e.created_at AS "createdAt"
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_subscriptions s ON s.id = d.subscription_id
         WHERE d.state = ANY($1::text[]) ORDER BY d.event_id DESC, d.subscription_id LIMIT $2`,
        [states, limit],
      ),

    requeue: (eventId, now) =>
      transaction(async (c) => {
        const sql = `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL WHERE state = 'parked'`;
        const result =
          eventId === "all"
            ? await c.query(sql, [now])
            : await c.query(`${sql} AND event_id = $2`, [now, eventId]);
        return result.rowCount ?? 0;
      }),

    // Each count walks a partial index: delivered rows (the bulk) are never read.
    backlog: async () =>
      (
        await rows<{ pending: number; parked: number; subscriptions: number }>(
          `SELECT (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending')::int AS pending,
             (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'parked')::int AS parked,
             (SELECT COUNT(*) FROM webhook_subscriptions WHERE active)::int AS subscriptions`,
        )
      )[0]!,

    // Old events every active subscription has passed, whose deliveries (if any) all succeeded; never the newest row.
    prune: (before, limit) =>
      transaction(async (c) => {
        const { rows: prunable } = await c.query(
          `SELECT e.id FROM webhook_events e
           WHERE e.id < (SELECT MAX(id) FROM webhook_events)
             AND e.id <= COALESCE((SELECT MIN(cursor_event_id) FROM webhook_subscriptions WHERE active), e.id)
             AND e.created_at < $1
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state <> 'delivered')
           ORDER BY e.id LIMIT $2`,
          [before, limit],
        );
        const ids = prunable.map((r: { id: number }) => r.id);
        if (ids.length === 0) return 0;
        await c.query("DELETE FROM webhook_attempts WHERE event_id = ANY($1::bigint[])", [ids]);
        await c.query("DELETE FROM webhook_deliveries WHERE event_id = ANY($1::bigint[])", [ids]);
        await c.query("DELETE FROM webhook_events WHERE id = ANY($1::bigint[])", [ids]);
        return ids.length;
      }),

    lastAttempts: (limit) =>
      rows(
        `SELECT a.subscription_id AS "subscriptionId", a.event_id AS "eventId", e.type, a.attempt, a.at, a.duration_ms AS "durationMs",
           a.http_status AS "httpStatus", a.error
         FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id ORDER BY a.id DESC LIMIT $1`,
        [limit],
      ),
  };
}
