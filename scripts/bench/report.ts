import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { goalsTable } from "./goals.js";
import { parseRunsCsv, recordedTable, type RecordedRow } from "./results.js";
import { RUNS_CSV } from "./runInfo.js";

/** docs/benchmarks.md in the sources (the report runs from dist/scripts/bench/). */
const BENCHMARKS_MD = join(import.meta.dirname, "..", "..", "..", "docs", "benchmarks.md");

/** The peers' comparison's runs; every other run is the whole bench's (older ones were copied from README.md). */
const PEERS_RECORDER = "npm run bench:peers at ";

/** An anvil end-to-end row's chain size, shape and configuration: a later row with the same key measures it again. */
const anvilRowKey = (measurement: string): string | undefined =>
  /^backfill \(whole process\): anvil end to end, ([\d,]+) Transfer logs \(saved (\S+) chain.*, attribution (on|off)$/
    .exec(measurement)
    ?.slice(1)
    .join(" ");

/**
 * The rows of the newest run of the whole bench and of the newest bench:peers run, and the newest
 * row of each anvil chain and configuration neither holds (a size left out with BENCH_ANVIL_LOGS,
 * or measured alone with BENCH_ROWS=anvil: the goals judge those rows too); newest run first.
 */
export function latestRows(rows: readonly RecordedRow[]): RecordedRow[] {
  const peers = (row: RecordedRow) => row.recordedIn.startsWith(PEERS_RECORDER);
  const newestRun = (test: (row: RecordedRow) => boolean) =>
    rows
      .filter(test)
      .reduce<string | undefined>(
        (run, row) => (run === undefined || row.runUtc > run ? row.runUtc : run),
        undefined,
      );
  const runs = new Set(
    [newestRun((row) => !peers(row)), newestRun(peers)].filter((run) => run !== undefined),
  );
  const chosen = new Set(rows.filter((row) => runs.has(row.runUtc)));
  // A peers run's flashindex row is one run beside Ponder's: it does not stand for the bench's own row.
  const shown = new Set(
    [...chosen].filter((row) => !peers(row)).map((row) => anvilRowKey(row.measurement)),
  );
  const newestOfKey = new Map<string, RecordedRow>();
  for (const row of rows) {
    const key = anvilRowKey(row.measurement);
    if (key === undefined || shown.has(key) || peers(row)) continue;
    const kept = newestOfKey.get(key);
    if (kept === undefined || row.runUtc >= kept.runUtc) newestOfKey.set(key, row);
  }
  for (const row of newestOfKey.values()) chosen.add(row);
  // Newest run first; a run's rows in the order it recorded them (sort is stable).
  return rows
    .filter((row) => chosen.has(row))
    .sort((a, b) => (a.runUtc === b.runUtc ? 0 : a.runUtc > b.runUtc ? -1 : 1));
}

/**
 * Replaces what stands between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in `text` with
 * `content`. Throws when the markers are missing, so a renamed section is noticed, not skipped.
 */
export function replaceSection(text: string, name: string, content: string): string {
  const open = `<!-- bench:${name} -->`;
  const close = `<!-- /bench:${name} -->`;
  const start = text.indexOf(open);
  const end = text.indexOf(close);
  if (start === -1 || end < start)
    throw new Error(`docs/benchmarks.md has no ${open} … ${close} section`);
  return `${text.slice(0, start + open.length)}\n${content}\n${text.slice(end)}`;
}

/**
 * `npm run bench:report`: renders docs/benchmarks.md's latest table (latestRows) and its goals
 * table (each goal judged on the newest rows of results/runs.csv that measure it) from the recorded
 * runs, so neither is edited by hand.
 */
export function writeReport(runsCsv = RUNS_CSV, benchmarksMd = BENCHMARKS_MD): void {
  const rows = parseRunsCsv(readFileSync(runsCsv, "utf8"));
  let text = readFileSync(benchmarksMd, "utf8");
  text = replaceSection(text, "latest", recordedTable(latestRows(rows)));
  text = replaceSection(text, "goals", goalsTable(rows));
  writeFileSync(benchmarksMd, text);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  writeReport();
  console.log(`Wrote the latest table and the goals into ${BENCHMARKS_MD}`);
}
