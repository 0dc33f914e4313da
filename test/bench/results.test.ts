import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  appendRuns,
  markdownTable,
  parseRunsCsv,
  recordedTable,
  RUNS_CSV_COLUMNS,
  runsCsvRows,
  type BenchLine,
} from "../../scripts/bench/results.js";

const ROOT = join(import.meta.dirname, "..", "..");
const RUNS_CSV = join(ROOT, "scripts", "bench", "results", "runs.csv");

const lines: BenchLine[] = [
  {
    measurement:
      "backfill (whole process): synthetic RPC, 1,000,000 Transfer logs, attribution off",
    logs: 1_000_000,
    seconds: 11.4157,
    logsPerSecond: 87_599.4,
    peakRssMb: 205,
    cpuSeconds: 17.83,
  },
  {
    measurement:
      "pre-confirmation: pendingLogs notification → committed row, 100 logs/s in 200 ms flashblock bursts",
    logs: 980,
    p50Ms: 3.46,
    p99Ms: 9.5,
  },
  {
    measurement:
      "reorg rollback: 50 blocks holding 10,000 logs over 1,000,000 stored, one transaction",
    logs: 10_000,
    seconds: 0.3362,
    secondsDigits: 3,
  },
];
const run = {
  runUtc: "2026-11-26T12:05:00.000Z",
  machine: '2 × Intel Xeon, 24 GiB, Node v20.20.2, "quiet"',
  recordedIn: "npm run bench at f7350a0",
};

/** Splits one CSV line into its fields (RFC 4180 quoting). */
function csvFields(line: string): string[] {
  return [...line.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) =>
    m[1]!.replace(/^"([\s\S]*)"$/, "$1").replaceAll('""', '"'),
  );
}

describe("the bench's results", () => {
  test("markdownTable() writes the table docs/benchmarks.md keeps, with empty cells where a figure does not apply", () => {
    expect(markdownTable(lines).split("\n")).toEqual([
      "| measurement | logs | seconds | logs/s | peak RSS MB | CPU s | p50 ms | p99 ms |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      "| backfill (whole process): synthetic RPC, 1,000,000 Transfer logs, attribution off | 1000000 | 11.42 | 87599 | 205 | 17.8 | | |",
      "| pre-confirmation: pendingLogs notification → committed row, 100 logs/s in 200 ms flashblock bursts | 980 | | | | | 3.5 | 9.5 |",
      "| reorg rollback: 50 blocks holding 10,000 logs over 1,000,000 stored, one transaction | 10000 | 0.336 | | | | | |",
    ]);
  });

  test("markdownTable() with a run names its start and machine on every row", () => {
    const table = markdownTable(lines.slice(0, 1), run).split("\n");
    expect(table[0]).toBe(
      "| run (UTC) | machine | measurement | logs | seconds | logs/s | peak RSS MB | CPU s | p50 ms | p99 ms |",
    );
    expect(table[1]).toBe("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    expect(table[2]).toBe(
      `| 2026-11-26 12:05 | ${run.machine} | ${lines[0]!.measurement} | 1000000 | 11.42 | 87599 | 205 | 17.8 | | |`,
    );
  });

  test("parseRunsCsv() reads back what appendRuns() wrote, quoted commas, quotes and empty cells included", () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-results-"));
    const path = join(dir, "runs.csv");
    appendRuns(path, run, lines);
    const rows = parseRunsCsv(readFileSync(path, "utf8"));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toEqual({
      runUtc: run.runUtc,
      machine: run.machine,
      measurement: lines[0]!.measurement,
      logs: 1_000_000,
      seconds: 11.42,
      logsPerSecond: 87_599,
      peakRssMb: 205,
      cpuSeconds: 17.8,
      p50Ms: undefined,
      p99Ms: undefined,
      recordedIn: "npm run bench at f7350a0",
      note: "",
    });
    expect(rows[2]!.seconds).toBe(0.336);
    expect(recordedTable(rows.slice(2)).split("\n")[2]).toBe(
      `| 2026-11-26 12:05 | ${run.machine} | ${lines[2]!.measurement} | 10000 | 0.336 | | | | | |`,
    );
  });

  test("parseRunsCsv() refuses another header, a short row and a figure that is not a number, naming the row", () => {
    const header = RUNS_CSV_COLUMNS.join(",");
    expect(() => parseRunsCsv("date,figure\n1,2\n")).toThrow(/its header is "date,figure"/);
    expect(() => parseRunsCsv(`${header}\n2026-11-26,m,x,1,2\n`)).toThrow(
      /row 2: 5 fields, not 12/,
    );
    expect(() => parseRunsCsv(`${header}\n2026-11-26,m,x,1,fast,,,,,,r,\n`)).toThrow(
      /row 2: seconds is "fast", not a number/,
    );
    expect(() => parseRunsCsv(`${header}\n2026-11-26,"m,x,1\n`)).toThrow(
      /ends inside a quoted field/,
    );
  });

  test("runsCsvRows() writes one row per line in runs.csv's columns, quoting commas and quotes", () => {
    const rows = runsCsvRows(run, lines).trimEnd().split("\n");
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(csvFields(row)).toHaveLength(RUNS_CSV_COLUMNS.length);
    expect(csvFields(rows[0]!)).toEqual([
      run.runUtc,
      run.machine,
      lines[0]!.measurement,
      "1000000",
      "11.42",
      "87599",
      "205",
      "17.8",
      "",
      "",
      "npm run bench at f7350a0",
      "",
    ]);
  });

  test("appendRuns() appends to the committed runs.csv's format, and refuses a file with other columns", () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-results-"));
    const copy = join(dir, "runs.csv");
    copyFileSync(RUNS_CSV, copy);
    const before = readFileSync(copy, "utf8");
    appendRuns(copy, run, lines);
    const after = readFileSync(copy, "utf8");
    expect(after.startsWith(before)).toBe(true);
    expect(after.slice(before.length)).toBe(runsCsvRows(run, lines));

    const fresh = join(dir, "fresh.csv");
    appendRuns(fresh, run, lines);
    expect(readFileSync(fresh, "utf8")).toBe(
      `${RUNS_CSV_COLUMNS.join(",")}\n${runsCsvRows(run, lines)}`,
    );

    const other = join(dir, "other.csv");
    writeFileSync(other, "date,figure\n");
    expect(() => appendRuns(other, run, lines)).toThrow(/other\.csv: its header is "date,figure"/);
    expect(readFileSync(other, "utf8")).toBe("date,figure\n");
  });

  test("every row of the committed runs.csv has its columns", () => {
    const [header, ...rows] = readFileSync(RUNS_CSV, "utf8").trimEnd().split("\n");
    expect(header).toBe(RUNS_CSV_COLUMNS.join(","));
    expect(rows.length).toBeGreaterThan(200);
    for (const row of rows) expect(csvFields(row), row).toHaveLength(RUNS_CSV_COLUMNS.length);
    expect(parseRunsCsv(readFileSync(RUNS_CSV, "utf8"))).toHaveLength(rows.length);
  });
});
