import type { BenchLine } from "./results.js";
import type { SettleBenchRow } from "./settleBench.js";

/**
 * The settle rows of `npm run bench` (issue 30's goal: p50 ≤ 400 ms and p99 ≤ 1 s pre-confirmed,
 * at least 5× faster than the reference at p50, 20 settles a second through one relayer): runs
 * settleBench.js in a process of its own through `runNode` and turns its figures into table lines.
 * `logs` holds the payments answered `success: true`.
 */
export async function settleLines(
  runNode: (script: string, args: string[]) => Promise<string>,
): Promise<BenchLine[]> {
  const rows = JSON.parse(await runNode("settleBench.js", [])) as SettleBenchRow[];
  return rows.map((row): BenchLine => ({
    measurement: settleMeasurement(row),
    logs: row.settled,
    seconds: row.settled / row.settledPerSecond,
    p50Ms: row.p50Ms,
    p99Ms: row.p99Ms,
  }));
}

/** What a settle row measured, in the table's words. */
function settleMeasurement(row: SettleBenchRow): string {
  const who =
    row.facilitator === "flashindex"
      ? `flashindex facilitator, settleWaitsFor "${row.settleWaitsFor}"`
      : "reference facilitator (@x402/core x402Facilitator + @x402/evm exact, viem receipt polling 1 s)";
  const load =
    row.perSecond === undefined ? `one at a time` : `${row.perSecond}/s offered open loop`;
  const failed = row.payments - row.settled;
  return `x402 settle: POST /settle → answer (devnet, 2 s blocks, 200 ms flashblocks), ${who}, ${row.payments} payments ${load} through one relayer, ${row.settledPerSecond.toFixed(1)} settled/s${failed > 0 ? `, ${failed} failed` : ""}`;
}
