import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { Store } from "../store/store.js";

/** How often the daemon expires orders and looks for captures of voided orders. */
export const ORDER_UPKEEP_INTERVAL_MS = 1_000;

/** meta key: the last audit row already alerted on, so a restart neither repeats nor misses an alert. */
const ALERT_CURSOR_KEY = "orders_alerted_transition_id";

/**
 * The daemon's periodic order work: expiry, and the loud report (error log + metric) of every
 * voided order captured on chain. The capture itself is recorded by the schema's triggers in the
 * event's own transaction; this only reads the flagged audit rows committed since the last tick.
 */
export function createOrderUpkeep(deps: { logger: Logger; metrics: Metrics; store: Store }) {
  const { store, metrics } = deps;
  const logger = deps.logger.child({ component: "orders" });
  // First start with this schema: earlier flagged rows (from `flashindex backfill`) are reported too.
  let cursor: number | undefined;

  return {
    /** One pass; `now` in unix ms. Returns what it did, for tests. */
    async tick(now: number): Promise<{ expired: number[]; flagged: number[] }> {
      cursor ??= Number((await store.readMeta(ALERT_CURSOR_KEY)) ?? 0);
      const expired = await store.expireOrders(now);
      if (expired.length > 0) {
        metrics.ordersExpired.inc(expired.length);
        logger.info({ msg: "Expired orders", order_ids: expired });
      }
      const flagged = await store.voidedThenCapturedSince(cursor);
      for (const transition of flagged) {
        const order = await store.getOrder(transition.orderId);
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
        await store.writeMeta(ALERT_CURSOR_KEY, String(cursor));
      }
      return { expired, flagged: flagged.map((t) => t.orderId) };
    },
  };
}
