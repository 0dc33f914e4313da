import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { goalsTable } from "./goals.js";
import { parseRunsCsv, recordedTable, type RecordedRow } from "./results.js";
import { RUNS_CSV } from "./runInfo.js";

/** docs/benchmarks.md in the sources (the report runs from dist/scripts/bench/). */
const BENCHMARKS_MD = join(import.meta.dirname, "..", "..", "..", "docs", "benchmarks.md");

/** The peers' comparison's runs; every other run is the whole bench's (older ones were copied from README.md). */
const PEERS_RECORDER = "npm run bench:peers at ";

/** The rows of the newest run of the whole bench and of the newest bench:peers run, newest run first. */
export function latestRows(rows: readonly RecordedRow[]): RecordedRow[] {
  const newestRun = (test: (row: RecordedRow) => boolean) =>
    rows.filter(test).reduce<string | undefined>((run, row) => (run === undefined || row.runUtc > run ? row.runUtc : run), undefined);
  const runs = [newestRun((row) => !row.recordedIn.startsWith(PEERS_RECORDER)), newestRun((row) => row.recordedIn.startsWith(PEERS_RECORDER))];
  return runs
    .filter((run) => run !== undefined)
    .sort()
    .reverse()
    .flatMap((run) => rows.filter((row) => row.runUtc === run));
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
  if (start === -1 || end < start) throw new Error(`docs/benchmarks.md has no ${open} … ${close} section`);
  return `${text.slice(0, start + open.length)}\n${content}\n${text.slice(end)}`;
}

/**
 * `npm run bench:report`: renders docs/benchmarks.md's latest table (the newest recorded run of
 * `npm run bench` and of `npm run bench:peers`) and its goals table (each goal judged on the newest
 * rows of results/runs.csv that measure it) from the recorded runs, so neither is edited by hand.
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
