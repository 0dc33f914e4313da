import type { EventName } from "../rows/paymentEvents.js";
import type { LogStatus } from "../rows/logRow.js";
import type { Metrics } from "../ops/metrics.js";
import type { EventCount } from "./types.js";

/** Inserted logs counted by event and status (InsertCounts.byEvent); keyed by the strings themselves, so a row adds no string of its own. */
export function createEventTally() {
  const tally = new Map<EventName, Map<LogStatus, EventCount>>();
  return {
    add(event: EventName, status: LogStatus): void {
      let byStatus = tally.get(event);
      if (byStatus === undefined) tally.set(event, (byStatus = new Map()));
      const count = byStatus.get(status);
      if (count === undefined) byStatus.set(status, { event, status, logs: 1 });
      else count.logs++;
    },
    counts: (): EventCount[] => [...tally.values()].flatMap((byStatus) => [...byStatus.values()]),
  };
}

/** Adds stored rows to `flashindex_logs_indexed_total{event,status}`. */
export function countIndexed(
  metrics: Pick<Metrics, "logsIndexed">,
  byEvent: readonly EventCount[],
): void {
  for (const { event, status, logs } of byEvent) metrics.logsIndexed.inc({ event, status }, logs);
}
