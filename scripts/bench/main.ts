import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";

/**
 * `npm run bench`: measures backfill throughput and peak RSS, each run in a fresh process.
 * (a) against a synthetic JSON-RPC server in its own process, so the RPC is not the bottleneck;
 * (b) end to end against anvil with the test token.
 * Prints one table; copy it into the README with the machine it ran on.
 */
const HERE = import.meta.dirname;
const TOKEN = "0x00000000000000000000000000000000000f1a54";
const SYNTHETIC_LOGS = Number(process.env.BENCH_SYNTHETIC_LOGS ?? 1_000_000);
const LOGS_PER_BLOCK = 20;
/** The V8 heap cap the Docker image also sets: without one, V8 grows its heap lazily and RSS says little about what is live. */
export const BENCH_NODE_OPTIONS = ["--max-old-space-size=256"];

type Figures = { logs: number; blocks: number; durationMs: number; peakRssMb: number };
type Row = { name: string; figures: Figures };

function runNode(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...BENCH_NODE_OPTIONS, join(HERE, script), ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    // The figures are the last line; anything before it is diagnostics.
    child.on("exit", (code) => (code === 0 ? resolve(out.trim().split("\n").at(-1) ?? "") : reject(new Error(`${script} exited ${code}`))));
  });
}

/** Starts the synthetic server as a separate process and resolves with its URL and a stop function. */
function startSyntheticServer(blocks: number): Promise<{ url: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(HERE, "syntheticRpcServer.js"), String(blocks), String(LOGS_PER_BLOCK), TOKEN], { stdio: ["ignore", "pipe", "inherit"] });
    child.stdout.once("data", (chunk: Buffer) => resolve({ url: chunk.toString().trim(), stop: () => child.kill() }));
    child.on("error", reject);
  });
}

function benchConfig(url: string, token: string, dbPath: string, attribution: boolean) {
  return JSON.stringify({
    chainId: 8453,
    attribution: { enabled: attribution },
    rpc: { http: [url], requestsPerSecond: 10_000, timeoutMs: 120_000 },
    tokens: [{ address: token, startBlock: 0 }],
    backfill: { windowBlocks: 1_000, concurrency: 4 },
    finality: { depth: 0 },
    database: { path: dbPath },
    metrics: { enabled: false },
    logLevel: "warn",
  });
}

async function synthetic(logs: number, attribution: boolean): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
  const server = await startSyntheticServer(Math.ceil(logs / LOGS_PER_BLOCK));
  try {
    const out = await runNode("runBackfill.js", [benchConfig(server.url, TOKEN, join(dir, "bench.db"), attribution)]);
    const name = `synthetic RPC, ${logs.toLocaleString("en-US")} Transfer logs, attribution ${attribution ? "on (one suffix per tx)" : "off"}`;
    return { name, figures: JSON.parse(out) as Figures };
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function endToEnd(): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "flashindex-bench-"));
  const out = await runNode("anvilBackfill.js", [dir]);
  rmSync(dir, { recursive: true, force: true });
  return JSON.parse(out) as Row;
}

const rows: Row[] = [];
for (const logs of [SYNTHETIC_LOGS / 10, SYNTHETIC_LOGS]) rows.push(await synthetic(logs, false));
rows.push(await synthetic(SYNTHETIC_LOGS / 10, true));
rows.push(await endToEnd());
const latency = JSON.parse(await runNode("pendingLatency.js", [])) as Array<{ rate: number; samples: number; p50Ms: number; p99Ms: number; maxMs: number }>;
const reorg = JSON.parse(await runNode("reorgRollback.js", [])) as { blocks: number; logs: number; backgroundLogs: number; rollbackMs: number };

const cpu = cpus()[0]?.model ?? "unknown cpu";
console.log(`\nflashindex benchmark (node ${BENCH_NODE_OPTIONS.join(" ")}) — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB\n`);
// One table: each row is one measurement; columns that do not apply stay empty.
console.log("| measurement | logs | seconds | logs/s | peak RSS MB | p50 ms | p99 ms |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const { name, figures } of rows) {
  const seconds = figures.durationMs / 1_000;
  console.log(`| backfill: ${name} | ${figures.logs} | ${seconds.toFixed(2)} | ${Math.round(figures.logs / seconds)} | ${figures.peakRssMb} | | |`);
}
for (const l of latency)
  console.log(`| pre-confirmation: pendingLogs notification → committed row, ${l.rate} logs/s in 200 ms flashblock bursts | ${l.samples} | | | | ${l.p50Ms.toFixed(1)} | ${l.p99Ms.toFixed(1)} |`);
console.log(`| reorg rollback: ${reorg.blocks} blocks holding ${reorg.logs.toLocaleString("en-US")} logs over ${reorg.backgroundLogs.toLocaleString("en-US")} stored, one transaction | ${reorg.logs} | ${(reorg.rollbackMs / 1_000).toFixed(3)} | | | | |`);
