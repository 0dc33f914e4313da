import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { anvilEndToEnd } from "./anvilBackfill.js";
import { startBenchPostgres } from "./benchPostgres.js";
import { cliLaunch, runCliBackfill, type ProcessFigures } from "./cliBackfill.js";
import { providerBackfill, providerSummary } from "./providerBackfill.js";
import { appendRuns, markdownTable, type BenchLine } from "./results.js";
import { settleLines } from "./settleRows.js";
import { startSyntheticRpcProcess } from "./syntheticRpcServer.js";

/**
 * `npm run bench`: every backfill figure is the whole `flashindex backfill` process, started as a
 * user starts it (the bin, no Node flags added), timed from spawn to exit:
 * (a) end to end against anvil serving a saved chain (generated once under .bench/, identical on every run);
 * (b) against a synthetic JSON-RPC server in its own process, its answers rendered before the clock
 *     starts, so the RPC is neither the bottleneck nor a rival for the two cores;
 * (c) through a provider-shaped proxy (providerProxy.ts) in front of anvil, on a small saved chain;
 * then pre-confirmation latency, webhook latency and reorg rollback, each in a process of its own
 * started as the bin starts Node (its shebang's environment and flags: the daemon's heap and
 * allocator); then x402 settle latency (settleRows.ts). Prints one table; with BENCH_RECORD=1 also
 * appends it to results/runs.csv. BENCH_ROWS=settle runs the settle rows alone.
 */
const HERE = import.meta.dirname;
/** When the run started (UTC): the run's name in results/runs.csv. */
const STARTED_UTC = new Date().toISOString();
const TOKEN = "0x00000000000000000000000000000000000f1a54";
const SYNTHETIC_LOGS = Number(process.env.BENCH_SYNTHETIC_LOGS ?? 1_000_000);
const ANVIL_LOGS = (process.env.BENCH_ANVIL_LOGS ?? "200000,1000000").split(",").map(Number);
const LOGS_PER_BLOCK = 20;
/** The saved chain behind the provider-shaped proxy: small, since the proxy allows 5 calls a second. */
const PROVIDER_LOGS = Number(process.env.BENCH_PROVIDER_LOGS ?? 20_000);

type Row = { name: string; figures: ProcessFigures };

if (process.env.BENCH_ROWS === "settle") {
  report(await settleLines(runNode));
  process.exit(0);
}

/** Runs one of the bench's scripts as the bin starts Node and returns its last line of output. */
function runNode(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const launch = cliLaunch();
    const child = spawn(process.execPath, [...launch.nodeFlags, join(HERE, script), ...args], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...launch.env } });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    // The figures are the last line; anything before it is diagnostics.
    child.on("exit", (code) => (code === 0 ? resolve(out.trim().split("\n").at(-1) ?? "") : reject(new Error(`${script} exited ${code}`))));
  });
}

async function synthetic(logs: number, attribution: boolean, postgres?: Awaited<ReturnType<typeof startBenchPostgres>>): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
  const blocks = Math.ceil(logs / LOGS_PER_BLOCK);
  const server = await startSyntheticRpcProcess(blocks, LOGS_PER_BLOCK, TOKEN, { blocks, transactions: attribution });
  const schema = `bench_${logs}`;
  try {
    const figures = await runCliBackfill(
      dir,
      {
        chainId: 8453,
        attribution: { enabled: attribution },
        rpc: { http: [server.url], requestsPerSecond: 10_000, timeoutMs: 120_000 },
        tokens: [{ address: TOKEN, startBlock: 0 }],
        backfill: { windowBlocks: 1_000, concurrency: 4 },
        finality: { depth: 0 },
        database: postgres === undefined ? { path: join(dir, "bench.db") } : { url: postgres.url, schema },
        metrics: { enabled: false },
        logLevel: "warn",
      },
      { from: 0, to: blocks - 1 },
      postgres === undefined ? undefined : () => postgres.countLogs(schema),
    );
    const into = postgres === undefined ? "" : " into Postgres on this host";
    const name = `synthetic RPC, ${logs.toLocaleString("en-US")} Transfer logs${into}, attribution ${attribution ? "on (one suffix per tx)" : "off"}`;
    return { name, figures };
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: Row[] = [];
for (const logs of ANVIL_LOGS) {
  const { name, ...figures } = await anvilEndToEnd(logs);
  rows.push({ name, figures });
}
// A rate-limited, range- and result-capped provider: the defaults (attribution on), and attribution off.
const providerRows = [await providerBackfill(PROVIDER_LOGS, true), await providerBackfill(PROVIDER_LOGS, false)];
// Attribution's cost, at the goals' 1,000,000 logs and at a tenth of it.
rows.push(await synthetic(SYNTHETIC_LOGS, false));
rows.push(await synthetic(SYNTHETIC_LOGS, true));
rows.push(await synthetic(SYNTHETIC_LOGS / 10, false));
rows.push(await synthetic(SYNTHETIC_LOGS / 10, true));
const postgres = await startBenchPostgres();
try {
  rows.push(await synthetic(SYNTHETIC_LOGS, false, postgres));
} finally {
  await postgres.stop();
}
const latency = JSON.parse(await runNode("pendingLatency.js", [])) as Array<{ rate: number; withBackfill: boolean; samples: number; p50Ms: number; p99Ms: number; maxMs: number }>;
const webhook = JSON.parse(await runNode("webhookLatency.js", [])) as { delivered: number; p50Ms: number; p99Ms: number };
const reorg = JSON.parse(await runNode("reorgRollback.js", [])) as { blocks: number; logs: number; backgroundLogs: number; rollbackMs: number };
const settle = await settleLines(runNode);

const lines: BenchLine[] = [
  ...rows.map(({ name, figures }): BenchLine => {
    const seconds = figures.durationMs / 1_000;
    const { logs, peakRssMb, cpuSeconds } = figures;
    return { measurement: `backfill (whole process): ${name}`, logs, seconds, logsPerSecond: logs / seconds, peakRssMb, cpuSeconds };
  }),
  ...providerRows.map((row): BenchLine => {
    const seconds = row.durationMs / 1_000;
    const { logs, peakRssMb, cpuSeconds } = row;
    return { measurement: `backfill (whole process) ${row.name}: ${providerSummary(row)}`, logs, seconds, logsPerSecond: logs / seconds, peakRssMb, cpuSeconds };
  }),
  ...latency.map(
    (l): BenchLine => ({
      measurement: `pre-confirmation: pendingLogs notification → committed row, ${l.rate} logs/s in 200 ms flashblock bursts${l.withBackfill ? ", while a backfill runs in the same process" : ""}`,
      logs: l.samples,
      p50Ms: l.p50Ms,
      p99Ms: l.p99Ms,
    }),
  ),
  {
    measurement: "webhook: pendingLogs notification → receiver's 2xx for payment.preconfirmed (devnet, local receiver)",
    logs: webhook.delivered,
    p50Ms: webhook.p50Ms,
    p99Ms: webhook.p99Ms,
  },
  {
    measurement: `reorg rollback: ${reorg.blocks} blocks holding ${reorg.logs.toLocaleString("en-US")} logs over ${reorg.backgroundLogs.toLocaleString("en-US")} stored, one transaction`,
    logs: reorg.logs,
    seconds: reorg.rollbackMs / 1_000,
    secondsDigits: 3,
  },
  ...settle,
];
report(lines);

/** Prints the run's table; with BENCH_RECORD=1 also appends it to results/runs.csv. */
function report(lines: BenchLine[]): void {
  const cpu = cpus()[0]?.model ?? "unknown cpu";
  const machine = `${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  console.log(`\nflashindex benchmark — started ${STARTED_UTC} — ${machine}\n`);
  // One table: each row is one measurement; columns that do not apply stay empty.
  console.log(markdownTable(lines));
  if (process.env.BENCH_RECORD === "1") {
    // Runs from dist/scripts/bench/: the committed results live in the sources.
    const runsCsv = join(HERE, "..", "..", "..", "scripts", "bench", "results", "runs.csv");
    appendRuns(runsCsv, { runUtc: STARTED_UTC, machine, recordedIn: `npm run bench at ${currentCommit()}` }, lines);
    console.log(`\nRecorded in ${runsCsv}`);
  }
}

/** The commit the run measured (with "+changes" when the work tree differs), or "unknown" outside git. */
function currentCommit(): string {
  try {
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: HERE, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: HERE, encoding: "utf8" }).trim() !== "";
    return dirty ? `${commit}+changes` : commit;
  } catch {
    return "unknown";
  }
}
