import type { Metrics } from "../ops/metrics.js";
import type { HtmlCell } from "./facilitatorSection.js";

/** One relayer of the pool as the status page shows it, from the capture driver's gauges. */
export type RelayerRow = {
  relayer: string;
  balanceWei: number | null;
  pendingCaptures: number;
  stuck: boolean;
};

type Sample = { value: number; labels: Record<string, string | number | undefined> };
type MetricLike = { get: () => Promise<{ values: Sample[] }> };

/**
 * The pool's relayers, read from flashindex_relayer_balance_wei, _pending_captures and _stuck (each
 * labelled by relayer). Empty until the capture driver's first pass has set them.
 */
export async function readRelayerPoolStatus(
  metrics: Pick<Metrics, "relayerBalance" | "relayerPendingCaptures" | "relayerStuck">,
): Promise<RelayerRow[]> {
  const byRelayer = async (metric: unknown) => {
    const values = (await (metric as MetricLike).get()).values.filter(
      (v) => typeof v.labels.relayer === "string",
    );
    return new Map(values.map((v) => [String(v.labels.relayer), v.value]));
  };
  const [balances, pending, stuck] = await Promise.all([
    byRelayer(metrics.relayerBalance),
    byRelayer(metrics.relayerPendingCaptures),
    byRelayer(metrics.relayerStuck),
  ]);
  const relayers = [...new Set([...pending.keys(), ...balances.keys()])];
  return relayers.map((relayer) => ({
    relayer,
    balanceWei: balances.get(relayer) ?? null,
    pendingCaptures: pending.get(relayer) ?? 0,
    stuck: stuck.get(relayer) === 1,
  }));
}

/** The page's relayer pool section; `table` is the page's own (it escapes every cell). */
export function renderRelayerPoolSection(
  rows: readonly RelayerRow[],
  html: {
    table: (
      headers: readonly string[],
      rows: ReadonlyArray<readonly HtmlCell[]>,
      empty: string,
    ) => string;
  },
): string {
  const eth = (wei: number | null) => (wei === null ? "–" : `${(wei / 1e18).toFixed(6)} ETH`);
  const cells = rows.map((r) => [
    r.relayer,
    eth(r.balanceWei),
    r.pendingCaptures,
    r.stuck ? "stuck: takes no new settle" : "taking settles",
  ]);
  return `<section id="relayers"><h2>Relayer pool</h2>
${html.table(["Relayer", "Balance", "Pending captures", "State"], cells, "No relayer read yet (the capture driver reads them every second).")}</section>`;
}
