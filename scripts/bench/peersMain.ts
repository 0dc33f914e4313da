import { anvilEndToEnd } from "./anvilBackfill.js";
import { CHAIN_SHAPES, type ChainShape } from "./savedAnvilChain.js";
import { providerBackfill, providerLine } from "./providerBackfill.js";
import { ponderLine, ponderRow } from "./ponderRows.js";
import { appendRuns, markdownTable, type BenchLine } from "./results.js";
import { currentCommit, machineText, RUNS_CSV } from "./runInfo.js";

/**
 * `npm run bench:peers`: Ponder (installed into .bench/peers/ponder/ on first use) and flashindex
 * side by side on the same saved anvil chains, in the same run, flashindex with its defaults: end
 * to end against anvil for each size of BENCH_PEERS_LOGS in each shape of BENCH_PEERS_SHAPES, and
 * through the provider-shaped proxy on the BENCH_PROVIDER_LOGS chain (dense, as flashindex's
 * provider rows). Each Ponder row names flashindex's ratio to it. Prints one
 * table; with BENCH_RECORD=1 also appends it to results/runs.csv.
 */
const STARTED_UTC = new Date().toISOString();
const PEERS_LOGS = (process.env.BENCH_PEERS_LOGS ?? "200000").split(",").map(Number);
const PROVIDER_LOGS = Number(process.env.BENCH_PROVIDER_LOGS ?? 200_000);
const PEERS_SHAPES = (process.env.BENCH_PEERS_SHAPES ?? CHAIN_SHAPES.join(","))
  .split(",")
  .map((shape) => {
    if (!CHAIN_SHAPES.includes(shape as ChainShape))
      throw new Error(`BENCH_PEERS_SHAPES: "${shape}" is not one of ${CHAIN_SHAPES.join(", ")}`);
    return shape as ChainShape;
  });

const lines: BenchLine[] = [];
/** Keeps a measured line, and says it on stderr at once: a later failure must not cost the earlier figures. */
function measured(line: BenchLine): void {
  lines.push(line);
  process.stderr.write(`measured: ${markdownTable([line]).split("\n")[2]}\n`);
}
for (const logs of PEERS_LOGS) {
  for (const shape of PEERS_SHAPES) {
    // One run, as Ponder's beside it.
    const { name, ...flashindex } = (
      await anvilEndToEnd(logs, shape, { runs: 1, attribution: [true] })
    )[0]!;
    const seconds = flashindex.durationMs / 1_000;
    measured({
      measurement: `backfill (whole process): ${name}`,
      logs: flashindex.logs,
      seconds,
      logsPerSecond: flashindex.logs / seconds,
      peakRssMb: flashindex.peakRssMb,
      cpuSeconds: flashindex.cpuSeconds,
    });
    measured(
      ponderLine(await ponderRow(logs, shape, false), {
        flashindexLogsPerSecond: flashindex.logs / seconds,
        flashindexConfiguration: "defaults, the row above",
      }),
    );
  }
}
if (PROVIDER_LOGS > 0) {
  const flashindex = providerLine(await providerBackfill(PROVIDER_LOGS, true));
  measured(flashindex);
  measured(
    ponderLine(await ponderRow(PROVIDER_LOGS, "dense", true), {
      flashindexLogsPerSecond: flashindex.logsPerSecond!,
      flashindexConfiguration: "defaults, the row above",
    }),
  );
}

const run = {
  runUtc: STARTED_UTC,
  machine: machineText(),
  recordedIn: `npm run bench:peers at ${currentCommit()}`,
};
console.log(`\nflashindex and its peers — started ${run.runUtc} — ${run.machine}\n`);
console.log(markdownTable(lines, run));
if (process.env.BENCH_RECORD === "1") {
  appendRuns(RUNS_CSV, run, lines);
  console.log(`\nRecorded in ${RUNS_CSV}`);
}
