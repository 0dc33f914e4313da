import type { Metrics } from "../ops/metrics.js";

/** What a write transaction does, for `flashindex_db_write_duration_seconds{kind}` (a closed set: low cardinality). */
export type WriteKind =
  | "backfill_window"
  | "index_build"
  | "head_block"
  | "reorg"
  | "finalize"
  | "removed_flag"
  | "preconfirmed"
  | "restart_settle"
  | "attribution"
  | "staged_attribution"
  | "orders";

/**
 * Runs `work` (which opens its own transaction) and records how long it took under `kind`, whether it
 * returned or threw; for a promise, once it settles.
 */
export function timed<T>(
  metrics: Pick<Metrics, "dbWriteDuration">,
  kind: WriteKind,
  work: () => T,
): T {
  const started = performance.now();
  const observe = () =>
    metrics.dbWriteDuration.observe({ kind }, (performance.now() - started) / 1_000);
  let result: T;
  try {
    result = work();
  } catch (error) {
    observe();
    throw error;
  }
  if (result instanceof Promise) return result.finally(observe) as T;
  observe();
  return result;
}
