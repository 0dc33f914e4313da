import type { StatusSnapshot } from "../store/types.js";
import type { Store } from "../store/store.js";
import type { Metrics } from "../ops/metrics.js";
import type { Hex } from "viem";
import { tokenCheckpoint } from "../sync/watchScope.js";
import {
  readFacilitatorStatus,
  renderFacilitatorSection,
  type FacilitatorStatus,
  type HtmlCell,
} from "./facilitatorSection.js";
import {
  readCaptureGasStatus,
  renderCaptureGasSection,
  type CaptureGasStatus,
} from "./captureGasSection.js";
import {
  readRelayerPoolStatus,
  renderRelayerPoolSection,
  type RelayerRow,
} from "./relayersSection.js";

/** The page reloads itself this often. */
export const STATUS_PAGE_REFRESH_SECONDS = 5;

/** Numbers the status page takes from the daemon's own metrics (the same ones /metrics serves). */
export type StatusMetrics = {
  chainHead: number | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
  reorgs: number;
  droppedPreconfirmed: number;
  webhooksDelivered: number;
  webhooksFailed: number;
  webhooksParked: number;
  /** Present when the facilitator is enabled. */
  facilitator?: FacilitatorStatus | undefined;
  /** The relayer pool, present with the facilitator. */
  relayers?: RelayerRow[] | undefined;
  /** Gas per payment, from the store's captures. */
  captureGas?: CaptureGasStatus | undefined;
};

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: HtmlCell): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Nearest-rank percentile (0 < p ≤ 100) of unsorted values; undefined when there are none. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const short = (hex: string) => (hex.length > 14 ? `${hex.slice(0, 8)}…${hex.slice(-4)}` : hex);
const time = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
const orDash = (value: number | null | undefined, unit = "") =>
  value === null || value === undefined ? "–" : `${value}${unit}`;

function table(
  headers: readonly string[],
  rows: ReadonlyArray<readonly HtmlCell[]>,
  empty: string,
): string {
  if (rows.length === 0) return `<p class="empty">${escapeHtml(empty)}</p>`;
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join("");
  const body = rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escapeHtml(cell)}</td>`).join("")}</tr>`)
    .join("\n");
  return `<table><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/**
 * The status page: one self-contained HTML document (no scripts, no external assets) that reloads
 * itself. Every value from the database or the config goes through escapeHtml.
 */
export function renderStatusPage(input: {
  chainId: number;
  now: number;
  snapshot: StatusSnapshot;
  metrics: StatusMetrics;
}): string {
  const { snapshot: s, metrics: m } = input;
  const head = m.chainHead;
  const backfill = s.tokens.map((t) => {
    const done = t.checkpoint === null ? 0 : t.checkpoint - t.startBlock + 1;
    const total = head === null ? null : head - t.startBlock + 1;
    const percent =
      total === null || total <= 0 ? null : Math.min(100, Math.floor((done / total) * 1000) / 10);
    return [
      t.label ?? "",
      t.token,
      t.startBlock,
      orDash(t.checkpoint),
      percent === null ? "–" : `${percent}%`,
    ];
  });
  const p50 = percentile(s.leadTimesMs, 50);
  const p99 = percentile(s.leadTimesMs, 99);
  const payments = s.payments.map((p) => [
    p.blockNumber,
    p.status,
    short(p.from),
    short(p.to),
    p.value,
    p.codes ?? "",
    short(p.txHash),
  ]);
  const removals = s.removals.map((r) => [
    time(r.removedAt),
    r.status,
    r.blockNumber,
    short(r.txHash),
  ]);
  const attempts = s.webhookAttempts.map((a) => [
    time(a.at),
    `evt_${input.chainId}_${a.eventId}`,
    a.type,
    a.attempt,
    a.httpStatus ?? "",
    a.error ?? "ok",
    `${a.durationMs} ms`,
  ]);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="${STATUS_PAGE_REFRESH_SECONDS}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>flashindex status · chain ${escapeHtml(input.chainId)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #222; }
h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 1.5rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } th, td { padding: 0.2rem 0.6rem; text-align: left; border-bottom: 1px solid #eee; font-variant-numeric: tabular-nums; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem; } dt { color: #666; } dd { margin: 0; }
.empty { color: #888; }
</style>
</head>
<body>
<h1>flashindex · chain ${escapeHtml(input.chainId)}</h1>
<p>As of ${escapeHtml(time(input.now))}; this page reloads every ${STATUS_PAGE_REFRESH_SECONDS} s.</p>
<section id="head"><h2>Head and lag</h2>
<dl><dt>Chain head</dt><dd>${escapeHtml(orDash(head))}</dd>
<dt>Newest indexed block</dt><dd>${escapeHtml(orDash(s.newestBlock))}</dd>
<dt>Lag</dt><dd>${escapeHtml(orDash(m.lagBlocks, " blocks"))}, ${escapeHtml(orDash(m.lagSeconds === null ? null : Math.round(m.lagSeconds), " s"))}</dd></dl></section>
<section id="backfill"><h2>Backfill progress</h2>
${table(["Token", "Address", "Start block", "Checkpoint", "Progress"], backfill, "No tokens configured.")}
<p>Blocks whose builder-code attribution trails their stored logs: ${escapeHtml(s.attributionOwedBlocks)}</p></section>
<section id="lead-time"><h2>Pre-confirmation lead time (last hour)</h2>
<dl><dt>p50</dt><dd>${escapeHtml(orDash(p50, " ms"))}</dd><dt>p99</dt><dd>${escapeHtml(orDash(p99, " ms"))}</dd>
<dt>Logs</dt><dd>${escapeHtml(s.leadTimesMs.length)}</dd></dl></section>
<section id="payments"><h2>Last ${s.payments.length} payments</h2>
${table(["Block", "Status", "From", "To", "Value", "Builder codes", "Transaction"], payments, "No payments indexed yet.")}</section>
<section id="reorgs"><h2>Reorgs and dropped pre-confirmations</h2>
<dl><dt>Reorgs detected</dt><dd>${escapeHtml(m.reorgs)}</dd><dt>Dropped pre-confirmations</dt><dd>${escapeHtml(m.droppedPreconfirmed)}</dd></dl>
${table(["When", "Status", "Block", "Transaction"], removals, "No removed or dropped logs.")}</section>
<section id="orders"><h2>Orders by state</h2>
${table(
  ["State", "Orders"],
  s.orders.map((o) => [o.state, o.n]),
  "No orders.",
)}
<p>Voided off chain, then captured: ${escapeHtml(s.voidedThenCaptured)}</p></section>
<section id="webhooks"><h2>Webhook deliveries</h2>
<dl><dt>Subscriptions</dt><dd>${escapeHtml(s.webhooks.subscriptions)}</dd><dt>Pending</dt><dd>${escapeHtml(s.webhooks.pending)}</dd>
<dt>Parked</dt><dd>${escapeHtml(s.webhooks.parked)}</dd>
<dt>Since start</dt><dd>${escapeHtml(m.webhooksDelivered)} delivered, ${escapeHtml(m.webhooksFailed)} failed attempts, ${escapeHtml(m.webhooksParked)} parked</dd></dl>
${table(["When", "Event", "Type", "Attempt", "HTTP", "Result", "Took"], attempts, "No delivery attempts yet.")}</section>
${m.facilitator === undefined ? "" : renderFacilitatorSection(m.facilitator, { escapeHtml, table })}
${m.relayers === undefined ? "" : renderRelayerPoolSection(m.relayers, { table })}
${m.captureGas === undefined ? "" : renderCaptureGasSection(m.captureGas, { escapeHtml, table })}
</body>
</html>
`;
}

type MetricLike = {
  get: () => Promise<{
    values: Array<{ value: number; labels: Record<string, string | number | undefined> }>;
  }>;
};

/** Sum of a metric's values, optionally only those with `labels`. */
async function metricSum(metric: MetricLike, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Builds the page from the daemon's store (either backend) and metrics, on each request. */
export function createStatusPage(deps: {
  config: {
    chainId: number;
    tokens: ReadonlyArray<{
      address: string;
      label: string | undefined;
      startBlock: number;
      watch?: readonly Hex[] | undefined;
    }>;
    facilitator?: { enabled: boolean };
  };
  metrics: Metrics;
  store: Pick<Store, "statusSnapshot" | "syncedRanges" | "captures">;
}): () => Promise<string> {
  const { metrics } = deps;
  return async () => {
    const now = Date.now();
    const head = await metricSum(metrics.chainHeadBlock);
    const lagBlocks = await metricSum(metrics.lagBlocks);
    const lagSeconds = await metricSum(metrics.lagSeconds);
    return renderStatusPage({
      chainId: deps.config.chainId,
      now,
      snapshot: await watchedProgress(
        deps,
        await deps.store.statusSnapshot(deps.config.tokens, now),
      ),
      metrics: {
        // A gauge never set reads 0: show "–" until the head has been seen.
        chainHead: head > 0 ? head : null,
        lagBlocks: head > 0 ? lagBlocks : null,
        lagSeconds: head > 0 ? lagSeconds : null,
        reorgs: await metricSum(metrics.reorgs),
        droppedPreconfirmed: await metricSum(metrics.droppedPreconfirmed),
        webhooksDelivered: await metricSum(metrics.webhookDeliveries, { outcome: "delivered" }),
        webhooksFailed: await metricSum(metrics.webhookDeliveries, { outcome: "failed" }),
        webhooksParked: await metricSum(metrics.webhookDeliveries, { outcome: "parked" }),
        facilitator:
          deps.config.facilitator?.enabled === true
            ? await readFacilitatorStatus(metrics)
            : undefined,
        relayers:
          deps.config.facilitator?.enabled === true
            ? await readRelayerPoolStatus(metrics)
            : undefined,
        // Shown with the facilitator off too: `order capture` (cli/commands/orderCapture.ts) pays
        // merchant orders through the same capture relay, which records their gas.
        captureGas: await readCaptureGasStatus(deps.store.captures),
      },
    });
  };
}

/** A watched token's ranges are kept per address (sync/watchScope.ts): its progress is that of its least advanced address. */
async function watchedProgress(
  deps: Parameters<typeof createStatusPage>[0],
  snapshot: StatusSnapshot,
): Promise<StatusSnapshot> {
  const tokens = await Promise.all(
    snapshot.tokens.map(async (progress, i) => {
      const token = deps.config.tokens[i]!;
      if (token.watch === undefined) return progress;
      const checkpoint = await tokenCheckpoint(deps.store, {
        key: token.address.toLowerCase() as Hex,
        watch: token.watch,
        startBlock: token.startBlock,
      });
      return { ...progress, checkpoint: checkpoint < token.startBlock ? null : checkpoint };
    }),
  );
  return { ...snapshot, tokens };
}
