import type { Metrics } from "../ops/metrics.js";

/** The x402 facilitator as the status page shows it, from the daemon's own metrics. */
export type FacilitatorStatus = {
  /** Answers by endpoint and outcome (valid / success, or the refusal's reason), most first. */
  outcomes: Array<{ endpoint: string; outcome: string; count: number }>;
  /** Successful settles: how many, and the histogram buckets' upper bounds at p50 and p99 (ms); null before the first. */
  settled: { count: number; p50Ms: number | null; p99Ms: number | null };
  /** Null until the capture driver has read them. */
  relayerBalanceWei: number | null;
  pendingNonceGap: number | null;
};

type Sample = {
  value: number;
  labels: Record<string, string | number | undefined>;
  metricName?: string;
};
type MetricLike = { get: () => Promise<{ values: Sample[] }> };

/** Reads the facilitator's metrics: flashindex_settle_requests_total, _settle_latency_seconds, _relayer_*. */
export async function readFacilitatorStatus(
  metrics: Pick<Metrics, "settleRequests" | "settleLatency" | "relayerBalance" | "relayerNonceGap">,
): Promise<FacilitatorStatus> {
  const outcomes = (await (metrics.settleRequests as MetricLike).get()).values
    .filter((v) => v.value > 0)
    .map((v) => ({
      endpoint: String(v.labels.endpoint),
      outcome: String(v.labels.outcome),
      count: v.value,
    }))
    .sort((a, b) => b.count - a.count || a.endpoint.localeCompare(b.endpoint));
  const latency = (await (metrics.settleLatency as MetricLike).get()).values.filter(
    (v) => v.labels.outcome === "success",
  );
  const buckets = latency
    .filter((v) => v.metricName?.endsWith("_bucket") === true && v.labels.le !== "+Inf")
    .map((v) => ({ le: Number(v.labels.le), count: v.value }))
    .sort((a, b) => a.le - b.le);
  const count = latency.find((v) => v.metricName?.endsWith("_count") === true)?.value ?? 0;
  // The bucket bound at which the cumulative count reaches the rank: an upper bound, as Prometheus' histogram_quantile would bracket it.
  const quantile = (q: number): number | null => {
    if (count === 0) return null;
    const bucket = buckets.find((b) => b.count >= q * count);
    return bucket === undefined ? null : bucket.le * 1_000;
  };
  const gauge = async (metric: unknown): Promise<number | null> => {
    const values = (await (metric as MetricLike).get()).values;
    return values.length === 0 ? null : values[0]!.value;
  };
  const balance = await gauge(metrics.relayerBalance);
  return {
    outcomes,
    settled: { count, p50Ms: quantile(0.5), p99Ms: quantile(0.99) },
    // A gauge never set reads 0: a relayer with exactly 0 wei is shown as unread until the driver has seen it.
    relayerBalanceWei: balance === 0 ? null : balance,
    pendingNonceGap: balance === 0 ? null : await gauge(metrics.relayerNonceGap),
  };
}

/** What the status page prints in a cell: never an object, which would print as "[object Object]". */
export type HtmlCell = string | number | bigint | null | undefined;

/** The page's facilitator section; `escapeHtml` and `table` are the page's own. */
export function renderFacilitatorSection(
  status: FacilitatorStatus,
  html: {
    escapeHtml: (value: HtmlCell) => string;
    table: (
      headers: readonly string[],
      rows: ReadonlyArray<readonly HtmlCell[]>,
      empty: string,
    ) => string;
  },
): string {
  const { escapeHtml } = html;
  const ms = (value: number | null) => (value === null ? "–" : `≤ ${value} ms`);
  const eth =
    status.relayerBalanceWei === null ? "–" : `${(status.relayerBalanceWei / 1e18).toFixed(6)} ETH`;
  return `<section id="facilitator"><h2>x402 facilitator</h2>
<dl><dt>Settled</dt><dd>${escapeHtml(status.settled.count)}</dd>
<dt>Settle latency p50</dt><dd>${escapeHtml(ms(status.settled.p50Ms))}</dd>
<dt>Settle latency p99</dt><dd>${escapeHtml(ms(status.settled.p99Ms))}</dd>
<dt>Relayer balance</dt><dd>${escapeHtml(eth)}</dd>
<dt>Pending nonce gap</dt><dd>${escapeHtml(status.pendingNonceGap ?? "–")}</dd></dl>
${html.table(
  ["Endpoint", "Outcome", "Answers"],
  status.outcomes.map((o) => [o.endpoint, o.outcome, o.count]),
  "No verify or settle requests yet.",
)}</section>`;
}
