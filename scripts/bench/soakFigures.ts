/**
 * The arithmetic of the soak run (soak.ts): reading a Prometheus text scrape, the least-squares slope
 * of a series, the per-minute CSV and the verdicts. Kept apart from the run so a test can check it.
 */

/** One minute's record of the daemon and its surroundings (a row of results/soak-*.csv). */
export type SoakSample = {
  minute: number;
  utc: string;
  /** The host's 1- and 5-minute load averages (other processes share the cores). */
  load1: number;
  load5: number;
  rssMb: number;
  heapUsedMb: number;
  activeHandles: number;
  activeResources: number;
  /** p99 of the daemon's event-loop delay over the minute before the scrape (prom-client resets it at each scrape). */
  eventLoopP99Ms: number;
  dbMb: number;
  walMb: number;
  /** The daemon's CPU seconds so far (user + system). */
  cpuSeconds: number;
  /** Payment transactions mined so far (the traffic accounts' nonces). */
  paymentsMined: number;
  logsIndexed: number;
  preconfLogs: number;
  webhooksReceived: number;
  webhookBacklog: number;
  /** Failed sends of the traffic generator so far. */
  trafficErrors: number;
  /** Daemon log lines at warn or above so far. */
  daemonWarnings: number;
};

/** The columns of results/soak-*.csv, in order, each with how a sample writes it (no field holds a comma or a quote). */
const SOAK_CSV: ReadonlyArray<readonly [string, (s: SoakSample) => string | number]> = [
  ["minute", (s) => s.minute],
  ["utc", (s) => s.utc],
  ["load1", (s) => s.load1.toFixed(2)],
  ["load5", (s) => s.load5.toFixed(2)],
  ["rss_mb", (s) => s.rssMb.toFixed(1)],
  ["heap_used_mb", (s) => s.heapUsedMb.toFixed(1)],
  ["active_handles", (s) => s.activeHandles],
  ["active_resources", (s) => s.activeResources],
  ["eventloop_p99_ms", (s) => s.eventLoopP99Ms.toFixed(1)],
  ["db_mb", (s) => s.dbMb.toFixed(2)],
  ["wal_mb", (s) => s.walMb.toFixed(2)],
  ["cpu_s", (s) => s.cpuSeconds.toFixed(1)],
  ["payments_mined", (s) => s.paymentsMined],
  ["logs_indexed", (s) => s.logsIndexed],
  ["preconf_logs", (s) => s.preconfLogs],
  ["webhooks_received", (s) => s.webhooksReceived],
  ["webhook_backlog", (s) => s.webhookBacklog],
  ["traffic_errors", (s) => s.trafficErrors],
  ["daemon_warnings", (s) => s.daemonWarnings],
];

/** The CSV's header line. */
export const SOAK_CSV_HEADER = `${SOAK_CSV.map(([name]) => name).join(",")}\n`;

/** A sample as a CSV row. */
export function soakCsvRow(sample: SoakSample): string {
  return `${SOAK_CSV.map(([, cell]) => cell(sample)).join(",")}\n`;
}

/**
 * The sum of every sample of metric `name` in a Prometheus text scrape (all its label sets; one
 * unlabelled sample is that sample); 0 when it is declared without samples yet. Throws when the
 * scrape does not declare it: a renamed metric must not read as 0.
 */
export function metricSum(body: string, name: string): number {
  let found = false;
  let sum = 0;
  for (const line of body.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!rest.startsWith(" ") && !rest.startsWith("{")) continue;
    found = true;
    // `name{labels} value [timestamp]`: the value follows the labels' closing brace.
    const afterLabels = rest.startsWith("{") ? rest.slice(rest.lastIndexOf("}") + 1) : rest;
    sum += Number(afterLabels.trim().split(" ")[0]);
  }
  // A labelled counter no event has touched yet is declared without samples: that is 0.
  if (!found && !body.includes(`# TYPE ${name} `)) throw new Error(`the scrape has no ${name}`);
  return sum;
}

/** The least-squares fit of `y` over `x`: its slope and the slope's standard error (0 and Infinity below three distinct points). */
export function leastSquaresSlope(points: ReadonlyArray<{ x: number; y: number }>): {
  slope: number;
  standardError: number;
} {
  const n = points.length;
  const meanX = points.reduce((a, p) => a + p.x, 0) / Math.max(1, n);
  const meanY = points.reduce((a, p) => a + p.y, 0) / Math.max(1, n);
  let covariance = 0;
  let variance = 0;
  for (const p of points) {
    covariance += (p.x - meanX) * (p.y - meanY);
    variance += (p.x - meanX) ** 2;
  }
  const slope = variance === 0 ? 0 : covariance / variance;
  if (n < 3 || variance === 0) return { slope, standardError: Number.POSITIVE_INFINITY };
  const residuals = points.reduce((a, p) => a + (p.y - meanY - slope * (p.x - meanX)) ** 2, 0);
  return { slope, standardError: Math.sqrt(residuals / (n - 2) / variance) };
}

/** What the run concludes: slopes per hour over the samples after the warm-up, and the verdicts. */
export type SoakVerdict = {
  fittedMinutes: number;
  rssMbPerHour: number;
  rssMbPerHourError: number;
  rssMeanMb: number;
  rssFlat: boolean;
  heapMbPerHour: number;
  handlesPerHour: number;
  handlesPerHourError: number;
  handlesMean: number;
  handlesFlat: boolean;
  eventLoopP99MaxMs: number;
  eventLoopP99MedianMs: number;
  eventLoopUnder50Ms: boolean;
  paymentsPerSecond: number;
};

/**
 * A series is flat when the rise its fit draws over the fitted minutes stays under FLAT_SHARE of its
 * mean, or when its slope is within two standard errors of zero (no trend the noise does not
 * explain). A leak of one handle or one buffer per payment rises by thousands a minute at Base's rate.
 */
export const FLAT_SHARE = 0.1;
/** The event-loop delay goal: every minute's p99 under it. */
export const EVENT_LOOP_P99_GOAL_MS = 50;

/** Judges the samples from minute `warmupMinutes` on (caches and the first blocks settle before). */
export function judgeSoak(samples: readonly SoakSample[], warmupMinutes: number): SoakVerdict {
  const fitted = samples.filter((s) => s.minute >= warmupMinutes);
  const first = fitted[0];
  const last = fitted.at(-1);
  const fittedMinutes = first === undefined || last === undefined ? 0 : last.minute - first.minute;
  const perHour = (y: (s: SoakSample) => number) => {
    const fit = leastSquaresSlope(fitted.map((s) => ({ x: s.minute / 60, y: y(s) })));
    const mean = fitted.reduce((a, s) => a + y(s), 0) / Math.max(1, fitted.length);
    const flat =
      Math.abs(fit.slope * (fittedMinutes / 60)) < FLAT_SHARE * mean ||
      Math.abs(fit.slope) < 2 * fit.standardError;
    return { ...fit, mean, flat };
  };
  const rss = perHour((s) => s.rssMb);
  const handles = perHour((s) => s.activeHandles);
  // Minute 0 is the baseline scrape (no minute of traffic before it): its delay is not the run's.
  const delays = samples
    .filter((s) => s.minute > 0)
    .map((s) => s.eventLoopP99Ms)
    .sort((a, b) => a - b);
  return {
    fittedMinutes,
    rssMbPerHour: rss.slope,
    rssMbPerHourError: rss.standardError,
    rssMeanMb: rss.mean,
    rssFlat: rss.flat,
    heapMbPerHour: perHour((s) => s.heapUsedMb).slope,
    handlesPerHour: handles.slope,
    handlesPerHourError: handles.standardError,
    handlesMean: handles.mean,
    handlesFlat: handles.flat,
    eventLoopP99MaxMs: delays.at(-1) ?? Number.NaN,
    eventLoopP99MedianMs: delays[Math.floor((delays.length - 1) / 2)] ?? Number.NaN,
    eventLoopUnder50Ms: delays.length > 0 && delays.every((d) => d < EVENT_LOOP_P99_GOAL_MS),
    paymentsPerSecond:
      fittedMinutes === 0 ? 0 : (last!.paymentsMined - first!.paymentsMined) / (fittedMinutes * 60),
  };
}
