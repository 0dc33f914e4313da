import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";

/** One line of the bench's table: a measurement and the figures that apply to it (the rest stay empty). */
export type BenchLine = {
  measurement: string;
  logs: number;
  seconds?: number | undefined;
  /** Decimal places of `seconds` (default 2; a sub-second rollback takes 3). */
  secondsDigits?: number | undefined;
  logsPerSecond?: number | undefined;
  peakRssMb?: number | undefined;
  cpuSeconds?: number | undefined;
  p50Ms?: number | undefined;
  p99Ms?: number | undefined;
};

/** Where and what a run measured: its start (ISO 8601, UTC), the machine, the commit. */
export type BenchRun = { runUtc: string; machine: string; recordedIn: string };

/** The columns of results/runs.csv, in order (README.md here describes them). */
export const RUNS_CSV_COLUMNS = [
  "run_utc",
  "machine",
  "measurement",
  "logs",
  "seconds",
  "logs_per_second",
  "peak_rss_mb",
  "cpu_s",
  "p50_ms",
  "p99_ms",
  "recorded_in",
  "note",
] as const;

const fixed = (value: number | undefined, digits: number): string => (value === undefined ? "" : value.toFixed(digits));
const whole = (value: number | undefined): string => (value === undefined ? "" : String(Math.round(value)));

/** The figures of a line as the table and the CSV write them. */
function cells(line: BenchLine): string[] {
  return [
    String(line.logs),
    fixed(line.seconds, line.secondsDigits ?? 2),
    whole(line.logsPerSecond),
    whole(line.peakRssMb),
    fixed(line.cpuSeconds, 1),
    fixed(line.p50Ms, 1),
    fixed(line.p99Ms, 1),
  ];
}

/** The run's lines as one Markdown table, the form docs/benchmarks.md keeps. */
export function markdownTable(lines: readonly BenchLine[]): string {
  return [
    "| measurement | logs | seconds | logs/s | peak RSS MB | CPU s | p50 ms | p99 ms |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...lines.map((line) => `| ${[line.measurement, ...cells(line)].join(" | ")} |`.replace(/ {2,}\|/g, " |")),
  ].join("\n");
}

/** A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** The run's lines as rows of results/runs.csv (no header), each ending in a line break. */
export function runsCsvRows(run: BenchRun, lines: readonly BenchLine[]): string {
  return lines
    .map((line) => [run.runUtc, run.machine, line.measurement, ...cells(line), run.recordedIn, ""].map(csvField).join(",") + "\n")
    .join("");
}

/**
 * Appends the run's rows to the CSV file at `path`, writing the header first if the file is new.
 * Refuses a file whose header is not RUNS_CSV_COLUMNS: rows in other columns would be misread.
 */
export function appendRuns(path: string, run: BenchRun, lines: readonly BenchLine[]): void {
  const header = RUNS_CSV_COLUMNS.join(",");
  if (!existsSync(path)) writeFileSync(path, `${header}\n`);
  const found = readFileSync(path, "utf8").split("\n", 1)[0];
  if (found !== header) throw new Error(`${path}: its header is "${found}", not "${header}"; not appending`);
  appendFileSync(path, runsCsvRows(run, lines));
}
