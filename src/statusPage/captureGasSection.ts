import type { Address } from "viem";
import type { CaptureGasRow, CaptureStore } from "../store/captureStore.js";
import type { HtmlCell } from "./facilitatorSection.js";

/**
 * How many of the latest captures with recorded gas the page averages. A count, not a time window:
 * the page reloads every few seconds, so its read stays bounded however busy the day was, and a
 * quiet day still shows the last costs instead of nothing. Summed as bigint in JS, exact on both
 * backends (SQLite's INTEGER is 64 bits; a uint256 price times gas is not).
 */
export const CAPTURE_GAS_WINDOW = 1_000;

/** Payees listed, the most captures first. */
export const CAPTURE_GAS_TOP_PAYEES = 10;

/** Averages of a set of captures; a cost average only over those whose receipt gave a price. */
export type GasAverages = {
  count: number;
  /** Floor of the mean gas used; null with no capture. */
  avgGasUsed: bigint | null;
  /** Captures whose receipt carried `effectiveGasPrice`. */
  pricedCount: number;
  /** Floor of the mean of gas_used × effective_gas_price, in wei; null with no priced capture. */
  avgCostWei: bigint | null;
};

/** Gas per payment over the latest captures, overall and per payee. */
export type CaptureGasStatus = {
  window: number;
  overall: GasAverages;
  payees: Array<{ payee: Address } & GasAverages>;
};

/** Reads the latest captures with gas through the store and averages them. */
export async function readCaptureGasStatus(
  captures: Pick<CaptureStore, "recentGas">,
): Promise<CaptureGasStatus> {
  return summarizeCaptureGas(await captures.recentGas(CAPTURE_GAS_WINDOW), CAPTURE_GAS_WINDOW);
}

type Totals = { count: number; gas: bigint; pricedCount: number; costWei: bigint };

/** Averages `rows` overall and per payee; payees by count (then address), the top ones only. */
export function summarizeCaptureGas(
  rows: readonly CaptureGasRow[],
  window: number,
  topPayees = CAPTURE_GAS_TOP_PAYEES,
): CaptureGasStatus {
  const overall: Totals = { count: 0, gas: 0n, pricedCount: 0, costWei: 0n };
  const byPayee = new Map<Address, Totals>();
  for (const row of rows) {
    let payee = byPayee.get(row.payee);
    if (payee === undefined) {
      payee = { count: 0, gas: 0n, pricedCount: 0, costWei: 0n };
      byPayee.set(row.payee, payee);
    }
    for (const totals of [overall, payee]) {
      totals.count += 1;
      totals.gas += row.gasUsed;
      if (row.effectiveGasPrice !== null) {
        totals.pricedCount += 1;
        totals.costWei += row.gasUsed * row.effectiveGasPrice;
      }
    }
  }
  const payees = [...byPayee]
    .sort(([a, x], [b, y]) => y.count - x.count || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, topPayees)
    .map(([payee, totals]) => ({ payee, ...averages(totals) }));
  return { window, overall: averages(overall), payees };
}

function averages(totals: Totals): GasAverages {
  return {
    count: totals.count,
    avgGasUsed: totals.count === 0 ? null : totals.gas / BigInt(totals.count),
    pricedCount: totals.pricedCount,
    avgCostWei: totals.pricedCount === 0 ? null : totals.costWei / BigInt(totals.pricedCount),
  };
}

const eth = (wei: bigint | null) => (wei === null ? "–" : `${formatWeiAsEth(wei)} ETH`);

const WEI_PER_ETH = 10n ** 18n;

/**
 * Wei as ETH, exact, as viem's formatEther writes it; written here because the daemon's start
 * loads no viem (test/cli/startupImports.test.ts), and the status page is built at start.
 */
export function formatWeiAsEth(wei: bigint): string {
  const abs = wei < 0n ? -wei : wei;
  const fraction = (abs % WEI_PER_ETH).toString().padStart(18, "0").replace(/0+$/, "");
  return `${wei < 0n ? "-" : ""}${abs / WEI_PER_ETH}${fraction === "" ? "" : `.${fraction}`}`;
}

/** The page's gas per payment section; `escapeHtml` and `table` are the page's own. */
export function renderCaptureGasSection(
  status: CaptureGasStatus,
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
  const { overall } = status;
  return `<section id="capture-gas"><h2>Gas per payment</h2>
<p>${escapeHtml(`The latest ${status.window} captures with a paid receipt, at most.`)}</p>
<dl><dt>Captures</dt><dd>${escapeHtml(overall.count)}</dd>
<dt>Average gas used</dt><dd>${escapeHtml(overall.avgGasUsed ?? "–")}</dd>
<dt>Average cost</dt><dd>${escapeHtml(eth(overall.avgCostWei))}</dd>
<dt>Captures with a gas price</dt><dd>${escapeHtml(overall.pricedCount)}</dd></dl>
${html.table(
  ["Payee", "Captures", "Average gas used", "Average cost"],
  status.payees.map((p) => [p.payee, p.count, p.avgGasUsed ?? "–", eth(p.avgCostWei)]),
  "No capture with recorded gas yet.",
)}</section>`;
}
