import { alternatingRuns, type AlternatingRun } from "./anvilBackfill.js";
import { startSavedAnvilChain, type ChainShape } from "./savedAnvilChain.js";

/**
 * Attribution on against off, alternating, against one anvil serving a saved chain (loaded once):
 * `flashindex backfill` with the defaults as anvilBackfill.ts runs it, and per run the wall time,
 * flashindex's CPU seconds and anvil's. Prints one JSON line per run.
 * `node dist/scripts/bench/attributionAB.js [logs] [shape] [pairs] [extra config JSON]`
 * (defaults 200000 base-mix 2). The extra config is merged into the backfill's (e.g. a log level).
 */
const logs = Number(process.argv[2] ?? 200_000);
const shape = (process.argv[3] ?? "base-mix") as ChainShape;
const pairs = Number(process.argv[4] ?? 2);
const extra = JSON.parse(process.argv[5] ?? "{}") as Record<string, unknown>;

const chain = await startSavedAnvilChain(logs, shape);
try {
  const each = (run: AlternatingRun, pair: number) => {
    const line = {
      pair,
      attribution: run.attribution,
      logs: run.logs,
      seconds: +(run.durationMs / 1000).toFixed(2),
      logsPerSecond: Math.round(run.logs / (run.durationMs / 1000)),
      flashindexCpuS: run.cpuSeconds,
      anvilCpuS: +run.anvilCpuSeconds.toFixed(2),
      peakRssMb: run.peakRssMb,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  await alternatingRuns(chain, { pairs, extra, each });
} finally {
  await chain.anvil.stop();
}
