import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS } from "../../src/config/types.js";
import { processCpuSeconds, runCliBackfill, type ProcessFigures } from "./cliBackfill.js";
import {
  startSavedAnvilChain,
  type ChainShape,
  type SavedChain,
  type SavedChainMeta,
} from "./savedAnvilChain.js";

/**
 * Runs per configuration in the headline rows: attribution on and off in turn, the median kept. On
 * this host one configuration's logs/s moved by a fifth between runs minutes apart
 * (`attribution-pairs-after-pages` in results/measurements.csv), so one run per row judged the goals
 * on the host's drift as much as on the code.
 */
export const ANVIL_RUNS = Number(process.env.BENCH_ANVIL_RUNS ?? 3);
if (!Number.isInteger(ANVIL_RUNS) || ANVIL_RUNS < 1)
  throw new Error(
    `BENCH_ANVIL_RUNS must be a whole number of runs, at least 1, got "${process.env.BENCH_ANVIL_RUNS}"`,
  );

/** One run of an alternating series: its configuration, the process's figures and anvil's CPU seconds over it. */
export type AlternatingRun = ProcessFigures & { attribution: boolean; anvilCpuSeconds: number };

/**
 * `flashindex backfill` with attribution on and off in turn (on-off, off-on, …: drift falls on both
 * alike), `pairs` times each, against one anvil serving the saved chain (loaded once). `extra` is
 * merged into each run's configuration; `each` hears every run as it ends; `attribution` narrows
 * the configurations run (`[true]`: the defaults alone).
 */
export async function alternatingRuns(
  chain: SavedChain,
  {
    pairs,
    extra = {},
    each = () => undefined,
    attribution = [true, false],
  }: {
    pairs: number;
    extra?: Record<string, unknown>;
    each?: (run: AlternatingRun, pair: number) => void;
    attribution?: readonly boolean[];
  },
): Promise<AlternatingRun[]> {
  const runs: AlternatingRun[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    for (const on of pair % 2 === 0 ? attribution : [...attribution].reverse()) {
      const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
      try {
        const anvilBefore = processCpuSeconds(chain.anvil.process.pid!);
        const config = { ...anvilBackfillConfig(chain, dir, on), ...extra };
        const figures = await runCliBackfill(dir, config, {
          from: chain.deployBlock,
          to: chain.head,
        });
        const run = {
          ...figures,
          attribution: on,
          anvilCpuSeconds: processCpuSeconds(chain.anvil.process.pid!) - anvilBefore,
        };
        runs.push(run);
        each(run, pair);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  return runs;
}

/**
 * End to end: `flashindex backfill` (a fresh process, as a user starts it) against anvil serving a
 * saved chain of `logs` Transfer logs in the given shape, with the configuration a user gets: every
 * default (attribution on, the default rate limit, windows and concurrency, log level) but for the
 * node's URL, the token, the database file, finality at the head (the bench reads to its last block)
 * and metrics off (no port to share). `attribution: false` turns attribution off and nothing else.
 * `runs` alternating runs of each of `attribution`'s configurations (alternatingRuns); a row gives
 * its configuration's median run (the slower middle one of an even count) with anvil's CPU seconds
 * over it, the peak RSS of its largest, and the spread of logs/s. Returns a row per configuration,
 * in `attribution`'s order.
 */
export async function anvilEndToEnd(
  logs: number,
  shape: ChainShape,
  {
    runs = ANVIL_RUNS,
    attribution = [true, false],
  }: { runs?: number; attribution?: readonly boolean[] } = {},
): Promise<Array<ProcessFigures & { name: string }>> {
  const chain = await startSavedAnvilChain(logs, shape);
  try {
    const all = await alternatingRuns(chain, { pairs: runs, attribution });
    return attribution.map((on) => {
      const mine = all
        .filter((run) => run.attribution === on)
        .sort((a, b) => a.durationMs - b.durationMs);
      const median = mine[Math.floor(mine.length / 2)]!;
      const rate = (run: ProcessFigures) =>
        Math.round(run.logs / (run.durationMs / 1_000)).toLocaleString("en-US");
      const alternating =
        all.length > mine.length ? ` alternating with attribution ${on ? "off" : "on"}` : "";
      // anvil's CPU over the median run: what the node took of the two cores the run shared with it.
      const anvil = `anvil's CPU ${median.anvilCpuSeconds.toFixed(1)} s`;
      const series =
        mine.length === 1
          ? `; ${anvil}`
          : `; median of ${mine.length} runs${alternating} (${rate(mine.at(-1)!)}–${rate(mine[0]!)} logs/s; ${anvil})`;
      return {
        name: `anvil end to end, ${describeChain(chain)}${series}; ${describeConfig(on)}`,
        logs: median.logs,
        durationMs: median.durationMs,
        cpuSeconds: median.cpuSeconds,
        peakRssMb: Math.max(...mine.map((run) => run.peakRssMb)),
      };
    });
  } finally {
    await chain.anvil.stop();
  }
}

/** The configuration of an end-to-end backfill against a saved chain: the defaults, but what anvilEndToEnd says, with the database in `dir`. */
export function anvilBackfillConfig(
  chain: SavedChain,
  dir: string,
  attribution: boolean,
): Record<string, unknown> {
  return {
    chainId: 8453,
    ...(attribution ? {} : { attribution: { enabled: false } }),
    rpc: { http: [chain.anvil.httpUrl] },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    finality: { depth: 0 },
    database: { path: join(dir, "anvil.db") },
    metrics: { enabled: false },
  };
}

/** A saved chain as a row names it: size, shape, blocks and transactions. */
export function describeChain(chain: SavedChainMeta): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const blocks = chain.head - chain.deployBlock;
  const others = chain.otherTransactions === 0 ? "" : ` and ${n(chain.otherTransactions)} others`;
  return `${n(chain.logs)} Transfer logs (saved ${chain.shape} chain: ${n(blocks)} blocks, ${n(chain.tokenTransactions)} token transactions${others})`;
}

/** The configuration a row ran with: the defaults, with attribution on or off. */
export function describeConfig(attribution: boolean): string {
  const { requestsPerSecond } = DEFAULTS.rpc;
  const rate =
    requestsPerSecond === undefined
      ? "no request-rate ceiling until a provider refuses"
      : `${requestsPerSecond} requests/s`;
  const { windowBlocks, concurrency } = DEFAULTS.backfill;
  return `defaults (${rate}, windowBlocks ${windowBlocks}, concurrency ${concurrency}, log level ${DEFAULTS.logLevel}), attribution ${attribution ? "on" : "off"}`;
}
