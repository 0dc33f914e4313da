import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { anvilBackfillConfig } from "./anvilBackfill.js";
import { runCliBackfill } from "./cliBackfill.js";
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
const pid = chain.anvil.process.pid!;
const anvilCpuSeconds = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

try {
  for (let pair = 0; pair < pairs; pair++) {
    for (const attribution of pair % 2 === 0 ? [true, false] : [false, true]) {
      const dir = mkdtempSync(join(tmpdir(), "flashindex-ab-"));
      try {
        const before = anvilCpuSeconds();
        const config = { ...anvilBackfillConfig(chain, dir, attribution), ...extra };
        const figures = await runCliBackfill(dir, config, { from: chain.deployBlock, to: chain.head });
        const line = {
          pair,
          attribution,
          logs: figures.logs,
          seconds: +(figures.durationMs / 1000).toFixed(2),
          logsPerSecond: Math.round(figures.logs / (figures.durationMs / 1000)),
          flashindexCpuS: figures.cpuSeconds,
          anvilCpuS: +(anvilCpuSeconds() - before).toFixed(2),
          peakRssMb: figures.peakRssMb,
        };
        process.stdout.write(`${JSON.stringify(line)}\n`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
} finally {
  await chain.anvil.stop();
}
