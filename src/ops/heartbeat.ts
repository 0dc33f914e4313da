import type { Health } from "./health.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";

/** After catching up, the daemon says how it is doing this often (info level). */
export const HEARTBEAT_INTERVAL_MS = 30_000;

/** Counter totals the heartbeat reports as differences since the previous one. */
type Totals = {
  preconfirmed: number;
  confirmed: number;
  finalized: number;
  reorgs: number;
  dropped: number;
};

async function readTotals(metrics: Metrics): Promise<Totals> {
  const byStatus = new Map<string, number>();
  for (const v of (await metrics.logsIndexed.get()).values) {
    const status = String(v.labels.status);
    byStatus.set(status, (byStatus.get(status) ?? 0) + v.value);
  }
  const sum = async (counter: { get: () => Promise<{ values: Array<{ value: number }> }> }) =>
    (await counter.get()).values.reduce((a, v) => a + v.value, 0);
  return {
    preconfirmed: byStatus.get("preconfirmed") ?? 0,
    confirmed: byStatus.get("confirmed") ?? 0,
    finalized: byStatus.get("finalized") ?? 0,
    reorgs: await sum(metrics.reorgs),
    dropped: await sum(metrics.droppedPreconfirmed),
  };
}

async function gauge(metric: {
  get: () => Promise<{ values: Array<{ value: number }> }>;
}): Promise<number> {
  return (await metric.get()).values[0]?.value ?? 0;
}

/**
 * Logs "Heartbeat" every `intervalMs` once the backfill has caught up: head, lag, and the logs
 * stored by status, reorgs and dropped pre-confirmations since the previous heartbeat.
 */
export function startHeartbeat(
  deps: { logger: Logger; metrics: Metrics; health: Health },
  intervalMs = HEARTBEAT_INTERVAL_MS,
): { stop: () => void } {
  const logger = deps.logger.child({ component: "heartbeat" });
  let previous: Totals | undefined;
  const beat = async () => {
    const totals = await readTotals(deps.metrics);
    const since = previous ?? totals;
    previous = totals;
    if (!deps.health.isCaughtUp()) return;
    logger.info({
      msg: "Heartbeat",
      head_block: await gauge(deps.metrics.chainHeadBlock),
      lag_blocks: await gauge(deps.metrics.lagBlocks),
      lag_seconds: Math.round(await gauge(deps.metrics.lagSeconds)),
      preconfirmed: totals.preconfirmed - since.preconfirmed,
      confirmed: totals.confirmed - since.confirmed,
      finalized: totals.finalized - since.finalized,
      reorgs: totals.reorgs - since.reorgs,
      dropped: totals.dropped - since.dropped,
      interval_s: intervalMs / 1_000,
    });
  };
  void readTotals(deps.metrics).then((t) => (previous ??= t));
  const timer = setInterval(() => void beat().catch(() => undefined), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
