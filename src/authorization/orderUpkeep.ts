import type { Database } from "better-sqlite3";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { expireOrders, getOrder, voidedThenCapturedSince } from "./orders.js";

/** How often the daemon expires orders and looks for captures of voided orders. */
export const ORDER_UPKEEP_INTERVAL_MS = 1_000;

/** meta key: the last audit row already alerted on, so a restart neither repeats nor misses an alert. */
const ALERT_CURSOR_KEY = "orders_alerted_transition_id";

/**
 * The daemon's periodic order work: expiry, and the loud report (error log + metric) of every
 * voided order captured on chain. The capture itself is recorded by the schema's triggers in the
 * event's own transaction; this only reads the flagged audit rows committed since the last tick.
 */
export function createOrderUpkeep(deps: { logger: Logger; metrics: Metrics; db: Database }) {
  const { db, metrics } = deps;
  const logger = deps.logger.child({ component: "orders" });
  const readCursor = db.prepare("SELECT value FROM meta WHERE key = ?").pluck();
  const writeCursor = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  // First start with this schema: earlier flagged rows (from `flashindex backfill`) are reported too.
  let cursor = Number((readCursor.get(ALERT_CURSOR_KEY) as string | undefined) ?? 0);

  return {
    /** One pass; `now` in unix ms. Returns what it did, for tests. */
    tick(now: number): { expired: number[]; flagged: number[] } {
      const started = performance.now();
      const expired = expireOrders(db, now);
      metrics.dbWriteDuration.observe({ kind: "orders" }, (performance.now() - started) / 1_000);
      if (expired.length > 0) {
        metrics.ordersExpired.inc(expired.length);
        logger.info({ msg: "Expired orders", order_ids: expired });
      }
      const flagged = voidedThenCapturedSince(db, cursor);
      for (const transition of flagged) {
        const order = getOrder(db, transition.orderId);
        metrics.ordersVoidedThenCaptured.inc();
        logger.error({
          msg: "Captured a voided order",
          order_id: transition.orderId,
          token: order?.token,
          authorizer: order?.authorizer,
          nonce: order?.nonce,
          value: order?.value,
          tx_hash: transition.txHash,
          event_status: transition.eventStatus,
        });
      }
      const last = flagged.at(-1);
      if (last !== undefined) {
        cursor = last.id;
        writeCursor.run(ALERT_CURSOR_KEY, String(cursor));
      }
      return { expired, flagged: flagged.map((t) => t.orderId) };
    },
  };
}
