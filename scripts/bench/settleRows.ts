import type { BenchLine } from "./results.js";
import type { SettleBenchRow } from "./settleBench.js";

/**
 * The settle rows of `npm run bench` (issue 30's goal: p50 ≤ 400 ms and p99 ≤ 1 s pre-confirmed,
 * at least 5× faster than the reference at p50, 20 settles a second through one relayer): runs
 * settleBench.js in a process of its own through `runNode` and turns its figures into table lines.
 * `logs` holds the payments answered `success: true`. `which` "pool" runs issue 43's row alone
 * (100/s offered for 60 s through 4 relayers, checked against the chain); "pool-held" the same with
 * the first relayer held back by the stand-in for the run (issue 43: the others keep p99 ≤ 1 s).
 */
export async function settleLines(
  runNode: (script: string, args: string[]) => Promise<string>,
  which: "single" | "pool" | "pool-held" = "single",
): Promise<BenchLine[]> {
  const args = { single: [], pool: ["pool"], "pool-held": ["pool", "held"] }[which];
  const rows = JSON.parse(await runNode("settleBench.js", args)) as SettleBenchRow[];
  return rows.map((row): BenchLine => ({
    measurement: settleMeasurement(row),
    logs: row.settled,
    seconds: row.settled / row.settledPerSecond,
    p50Ms: row.p50Ms,
    p99Ms: row.p99Ms,
  }));
}

/** What a settle row measured, in the table's words. */
export function settleMeasurement(row: SettleBenchRow): string {
  const who =
    row.facilitator === "flashindex"
      ? `flashindex facilitator, settleWaitsFor "${row.settleWaitsFor}"`
      : "reference facilitator (@x402/core x402Facilitator + @x402/evm exact, viem receipt polling 1 s)";
  const load =
    row.perSecond === undefined ? `one at a time` : `${row.perSecond}/s offered open loop`;
  const failed = row.payments - row.settled;
  const through =
    row.relayers === 1
      ? "one relayer"
      : row.held === undefined
        ? `${row.relayers} relayers`
        : `${row.relayers} relayers, ${HELD_BACK} (it carried ${row.held.carried} settled; percentiles of the ${row.settled - row.held.carried} the others carried)`;
  const seconds = row.perSecond === undefined ? "" : ` for ${row.payments / row.perSecond} s`;
  const chain =
    row.chain === undefined
      ? ""
      : `; chain: AuthorizationUsed ${usedOfSettled(row)}, ${row.chain.usedTwice} twice, relayer transactions ${row.chain.relayerTransactions}, sent twice ${sentTwice(row)}`;
  return `x402 settle: POST /settle → answer (devnet, 2 s blocks, 200 ms flashblocks), ${who}, ${row.payments} payments ${load}${row.relayers > 1 ? seconds : ""} through ${through}, ${row.settledPerSecond.toFixed(1)} settled/s${failed > 0 ? `, ${failed} failed (${failureReasons(row)})` : ""}${chain}`;
}

/** How the held row's measurement names the held relayer (goals.ts tells the pool rows apart by it). */
export const HELD_BACK = "one held back by the stand-in for the run";

/**
 * Settled payments whose AuthorizationUsed is on chain: the held row counts them per settled
 * transaction (payments answered as failures while held may land once released, and count apart,
 * in all); the pool row counts every AuthorizationUsed of the run.
 */
function usedOfSettled(row: SettleBenchRow): string {
  const chain = row.chain!;
  return chain.settledUsed === undefined
    ? `${chain.authorizationsUsed} of ${row.settled} settled`
    : `${chain.settledUsed} of ${row.settled} settled (${chain.authorizationsUsed} in all)`;
}

/**
 * Payments sent more than once, as the chain tells: a second send of one authorization reverts
 * (the token logs no second AuthorizationUsed) but still spends a relayer nonce, so it shows as
 * relayer transactions beyond the authorizations used.
 */
function sentTwice(row: SettleBenchRow): number {
  const chain = row.chain!;
  return chain.usedTwice + Math.max(0, chain.relayerTransactions - chain.authorizationsUsed);
}

/** The failures of a row by reason, most first: `connection ECONNRESET 12, http 503 2`. */
function failureReasons(row: SettleBenchRow): string {
  return Object.entries(row.failures)
    .sort(([, a], [, b]) => b - a)
    .map(([reason, count]) => `${reason} ${count}`)
    .join(", ");
}
