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

const fixed = (value: number | undefined, digits: number): string =>
  value === undefined ? "" : value.toFixed(digits);
const whole = (value: number | undefined): string =>
  value === undefined ? "" : String(Math.round(value));

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

const FIGURE_HEADER =
  "measurement | logs | seconds | logs/s | peak RSS MB | CPU s | p50 ms | p99 ms";
const FIGURE_ALIGN = "--- | ---: | ---: | ---: | ---: | ---: | ---: | ---:";
const tableRow = (cellsOfRow: readonly string[]) =>
  `| ${cellsOfRow.join(" | ")} |`.replace(/ {2,}\|/g, " |");

/**
 * The run's lines as one Markdown table, the form docs/benchmarks.md keeps; with `run`, each row
 * also names the run's start (UTC, to the minute) and the machine.
 */
export function markdownTable(
  lines: readonly BenchLine[],
  run?: Pick<BenchRun, "runUtc" | "machine">,
): string {
  const lead = run === undefined ? [] : [run.runUtc.slice(0, 16).replace("T", " "), run.machine];
  return [
    `| ${run === undefined ? "" : "run (UTC) | machine | "}${FIGURE_HEADER} |`,
    `| ${run === undefined ? "" : "--- | --- | "}${FIGURE_ALIGN} |`,
    ...lines.map((line) => tableRow([...lead, line.measurement, ...cells(line)])),
  ].join("\n");
}

/** Recorded rows (runs.csv) as one Markdown table, each with its run's start and machine, figures as recorded. */
export function recordedTable(rows: readonly RecordedRow[]): string {
  const cell = (value: number | undefined) => (value === undefined ? "" : String(value));
  return [
    `| run (UTC) | machine | ${FIGURE_HEADER} |`,
    `| --- | --- | ${FIGURE_ALIGN} |`,
    ...rows.map((row) =>
      tableRow([
        row.runUtc.slice(0, 16).replace("T", " "),
        row.machine,
        row.measurement,
        ...[
          row.logs,
          row.seconds,
          row.logsPerSecond,
          row.peakRssMb,
          row.cpuSeconds,
          row.p50Ms,
          row.p99Ms,
        ].map(cell),
      ]),
    ),
  ].join("\n");
}

/** A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** The run's lines as rows of results/runs.csv (no header), each ending in a line break. */
export function runsCsvRows(run: BenchRun, lines: readonly BenchLine[]): string {
  return lines
    .map(
      (line) =>
        [run.runUtc, run.machine, line.measurement, ...cells(line), run.recordedIn, ""]
          .map(csvField)
          .join(",") + "\n",
    )
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
  if (found !== header)
    throw new Error(`${path}: its header is "${found}", not "${header}"; not appending`);
  appendFileSync(path, runsCsvRows(run, lines));
}

/** One row of results/runs.csv as read back: the figures as numbers, an empty cell as undefined. */
export type RecordedRow = {
  runUtc: string;
  machine: string;
  measurement: string;
  logs: number;
  seconds?: number | undefined;
  logsPerSecond?: number | undefined;
  peakRssMb?: number | undefined;
  cpuSeconds?: number | undefined;
  p50Ms?: number | undefined;
  p99Ms?: number | undefined;
  recordedIn: string;
  note: string;
};

/** The records of a CSV text (RFC 4180: quoted fields may hold commas, quotes and line breaks). */
function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let quoted = false;
  const endField = () => {
    record.push(field);
    field = "";
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted && c === '"' && text[i + 1] === '"') {
      field += '"';
      i++;
    } else if (c === '"') quoted = !quoted;
    else if (quoted || (c !== "," && c !== "\n" && c !== "\r")) field += c;
    else if (c === ",") endField();
    else {
      if (c === "\r" && text[i + 1] === "\n") i++;
      endField();
      records.push(record);
      record = [];
    }
  }
  if (quoted) throw new Error("runs.csv ends inside a quoted field");
  if (field !== "" || record.length > 0) {
    endField();
    records.push(record);
  }
  return records;
}

/**
 * The rows of a runs.csv text, in file order. Refuses a header other than RUNS_CSV_COLUMNS and a
 * row with another number of fields, naming its line: a misread row would misstate a goal.
 */
export function parseRunsCsv(text: string): RecordedRow[] {
  const [header, ...records] = csvRecords(text);
  if (header?.join(",") !== RUNS_CSV_COLUMNS.join(","))
    throw new Error(
      `runs.csv: its header is "${header?.join(",")}", not "${RUNS_CSV_COLUMNS.join(",")}"`,
    );
  const number = (cell: string, row: number, column: string): number | undefined => {
    if (cell === "") return undefined;
    const value = Number(cell);
    if (!Number.isFinite(value))
      throw new Error(`runs.csv row ${row}: ${column} is "${cell}", not a number`);
    return value;
  };
  return records
    .filter((fields) => !(fields.length === 1 && fields[0] === ""))
    .map((fields, i) => {
      const row = i + 2;
      if (fields.length !== RUNS_CSV_COLUMNS.length)
        throw new Error(
          `runs.csv row ${row}: ${fields.length} fields, not ${RUNS_CSV_COLUMNS.length}`,
        );
      const [
        runUtc,
        machine,
        measurement,
        logs,
        seconds,
        logsPerSecond,
        peakRssMb,
        cpuSeconds,
        p50Ms,
        p99Ms,
        recordedIn,
        note,
      ] = fields as [string, ...string[]];
      return {
        runUtc,
        machine: machine!,
        measurement: measurement!,
        logs: number(logs!, row, "logs") ?? 0,
        seconds: number(seconds!, row, "seconds"),
        logsPerSecond: number(logsPerSecond!, row, "logs_per_second"),
        peakRssMb: number(peakRssMb!, row, "peak_rss_mb"),
        cpuSeconds: number(cpuSeconds!, row, "cpu_s"),
        p50Ms: number(p50Ms!, row, "p50_ms"),
        p99Ms: number(p99Ms!, row, "p99_ms"),
        recordedIn: recordedIn!,
        note: note!,
      };
    });
}
