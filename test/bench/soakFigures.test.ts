import { describe, expect, test } from "vitest";
import { createMetrics } from "../../src/ops/metrics.js";
import {
  judgeSoak,
  leastSquaresSlope,
  metricSum,
  SOAK_CSV_HEADER,
  soakCsvRow,
  type SoakSample,
} from "../../scripts/bench/soakFigures.js";

/** A minute's sample with quiet defaults; `over` sets what a case is about. */
function sample(minute: number, over: Partial<SoakSample> = {}): SoakSample {
  return {
    minute,
    utc: `2026-11-26T22:${String(10 + minute).padStart(2, "0")}:00.000Z`,
    load1: 4,
    load5: 4,
    rssMb: 100,
    heapUsedMb: 20,
    activeHandles: 10,
    activeResources: 20,
    eventLoopP99Ms: 12,
    dbMb: minute,
    walMb: 1,
    cpuSeconds: minute * 10,
    paymentsMined: minute * 3_000,
    logsIndexed: minute * 5_000,
    preconfLogs: minute * 5_000,
    webhooksReceived: minute * 10_000,
    webhookBacklog: 0,
    trafficErrors: 0,
    daemonWarnings: 0,
    ...over,
  };
}

describe("reading the daemon's scrape", () => {
  test("sums every label set of a metric, reads an unlabelled one, and tells a name that only shares a prefix apart", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.logsIndexed.inc({ event: "Transfer", status: "confirmed" }, 3);
    metrics.logsIndexed.inc({ event: "AuthorizationUsed", status: "preconfirmed" }, 4);
    metrics.lagBlocks.set(7);
    const body = await metrics.registry.metrics();
    expect(metricSum(body, "flashindex_logs_indexed_total")).toBe(7);
    expect(metricSum(body, "flashindex_sync_lag_blocks")).toBe(7);
    // flashindex_sync_lag_blocks must not be read as a sample of flashindex_sync_lag.
    expect(() => metricSum(body, "flashindex_sync_lag")).toThrow(
      "the scrape has no flashindex_sync_lag",
    );
  });

  test("a labelled counter declared without samples yet reads 0; a metric the scrape lacks is an error", async () => {
    const body = await createMetrics({ defaultMetrics: false }).registry.metrics();
    expect(metricSum(body, "flashindex_preconf_logs_total")).toBe(0);
    expect(() => metricSum(body, "flashindex_nodejs_active_handles_total")).toThrow(
      "the scrape has no flashindex_nodejs_active_handles_total",
    );
  });

  test("the default metrics the soak reads are all in a daemon's scrape", async () => {
    const body = await createMetrics().registry.metrics();
    for (const name of [
      "flashindex_process_resident_memory_bytes",
      "flashindex_nodejs_heap_size_used_bytes",
      "flashindex_nodejs_active_handles_total",
      "flashindex_nodejs_active_resources_total",
      "flashindex_nodejs_eventloop_lag_p99_seconds",
    ])
      expect(metricSum(body, name), name).toBeGreaterThanOrEqual(0);
  });
});

describe("judging a soak run", () => {
  test("the least-squares fit of an exact line is its slope with no error; noise gives an error; one x gives no slope", () => {
    const line = leastSquaresSlope([0, 1, 2, 3].map((x) => ({ x, y: 5 + 2.5 * x })));
    expect(line.slope).toBeCloseTo(2.5, 12);
    expect(line.standardError).toBeCloseTo(0, 12);
    // Residuals +1, -1, -1, +1 around y = 5: slope 0, SE = sqrt(4 / 2 / 5).
    expect(leastSquaresSlope([6, 4, 4, 6].map((y, x) => ({ x, y })))).toEqual({
      slope: 0,
      standardError: Math.sqrt(4 / 2 / 5),
    });
    expect(
      leastSquaresSlope([
        { x: 1, y: 9 },
        { x: 1, y: 3 },
      ]),
    ).toEqual({ slope: 0, standardError: Number.POSITIVE_INFINITY });
  });

  test("flat series that wander pass; a leak of a handle a minute and a growing RSS do not; the warm-up is left out", () => {
    // RSS climbs for three minutes while caches fill, then wanders by a megabyte; handles wander by two.
    const wander = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((m) =>
      sample(m, { rssMb: m < 3 ? 40 + 20 * m : 100 + (m % 2), activeHandles: 10 + (m % 3) }),
    );
    const flat = judgeSoak(wander, 3);
    expect(flat).toMatchObject({
      fittedMinutes: 7,
      rssFlat: true,
      handlesFlat: true,
      eventLoopP99MaxMs: 12,
      eventLoopUnder50Ms: true,
      paymentsPerSecond: 50,
    });
    // With the warm-up in, the climb is a trend the noise does not explain.
    expect(judgeSoak(wander, 0).rssFlat).toBe(false);

    const leaking = [0, 1, 2, 3, 4, 5, 6].map((m) =>
      sample(m, { rssMb: 100 + 2 * m, activeHandles: 10 + m, eventLoopP99Ms: m === 4 ? 51 : 12 }),
    );
    const verdict = judgeSoak(leaking, 0);
    expect(verdict.rssMbPerHour).toBeCloseTo(120, 9);
    expect(verdict.handlesPerHour).toBeCloseTo(60, 9);
    expect(verdict).toMatchObject({
      rssFlat: false,
      handlesFlat: false,
      eventLoopP99MaxMs: 51,
      eventLoopUnder50Ms: false,
    });
  });

  test("minute 0's event-loop delay (startup, before any traffic) is not the run's", () => {
    const samples = [sample(0, { eventLoopP99Ms: 235 }), sample(1), sample(2)];
    expect(judgeSoak(samples, 0)).toMatchObject({
      eventLoopP99MaxMs: 12,
      eventLoopUnder50Ms: true,
    });
  });

  test("a CSV row has one field per column", () => {
    expect(SOAK_CSV_HEADER.split(",")[8]).toBe("eventloop_p99_ms");
    expect(soakCsvRow(sample(3)).trimEnd().split(",")).toHaveLength(
      SOAK_CSV_HEADER.split(",").length,
    );
  });
});
