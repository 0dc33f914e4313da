import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startDemoTraffic } from "../../src/devnet/demoTraffic.js";
import { startDevnet } from "../../src/devnet/startDevnet.js";
import { followDevnet } from "./devnetDaemonConfig.js";
import { CLI, processCpuSeconds } from "./cliBackfill.js";
import {
  judgeSoak,
  metricSum,
  SOAK_CSV_HEADER,
  soakCsvRow,
  type SoakSample,
} from "./soakFigures.js";

/**
 * `npm run bench:soak`: the daemon for BENCH_SOAK_MINUTES (default 30) at Base's USDC rate. The
 * devnet (anvil behind the Flashblocks stand-in: 2 s blocks, 200 ms flashblocks) and the demo
 * traffic (src/devnet/demoTraffic.ts: EIP-3009 payments from buyers, submitted by relayers with
 * ERC-8021 suffixes) run in this process; the daemon is the built bin, `flashindex start`, in its
 * own, following the devnet with pre-confirmations and delivering a merchant's webhooks (its
 * payments, pre-confirmed and confirmed) to a local receiver here. Every minute this scrapes the
 * daemon's /metrics (RSS, heap, active handles and resources, event-loop delay p99) and measures
 * the SQLite file and its WAL. At the end it fits the RSS and handle counts (least squares, per
 * hour) and says whether they are flat and whether every minute's event-loop p99 stayed under
 * 50 ms. Writes results/soak-<start>.csv and prints a JSON summary as its last line.
 */
const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 30);
const PAYMENTS_PER_SECOND = Number(process.env.BENCH_SOAK_PAYMENTS_PER_SECOND ?? 50);
const SAMPLE_MS = Number(process.env.BENCH_SOAK_SAMPLE_SECONDS ?? 60) * 1_000;
/** Minutes left out of the slopes: the daemon's caches, pools and JIT settle first. */
const WARMUP_MINUTES = Number(
  process.env.BENCH_SOAK_WARMUP_MINUTES ?? Math.min(3, Math.floor(MINUTES / 5)),
);
const STARTED_UTC = new Date().toISOString();
// Runs from dist/scripts/bench/: the committed results live in the sources.
const RESULTS = join(import.meta.dirname, "..", "..", "..", "scripts", "bench", "results");
/** The newest daemon output kept for a failure's message. */
const OUTPUT_TAIL = 20_000;

for (const [name, value] of Object.entries({
  MINUTES,
  PAYMENTS_PER_SECOND,
  SAMPLE_MS,
  WARMUP_MINUTES,
}))
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`soak: ${name} must be a non-negative number, got ${value}`);

const devnet = await startDevnet({
  blockTimeMs: 2_000,
  flashblockIntervalMs: 200,
  onError: (error) => console.error(`devnet: ${String(error)}`),
});
const dir = mkdtempSync(join(tmpdir(), "flashindex-soak-"));
const database = join(dir, "soak.db");

// Answers at once and only counts: the receiver is not what is measured.
let webhooksReceived = 0;
const receiver = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    webhooksReceived++;
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

/** The payee the webhook subscription follows: the demo traffic's first relayer (anvil's key 6). */
const MERCHANT = privateKeyToAccount(devnet.privateKeys[6]!).address.toLowerCase();
const config = join(dir, "soak.json");
writeFileSync(
  config,
  JSON.stringify({
    ...followDevnet(devnet),
    database: { path: database },
    metrics: { enabled: true, host: "127.0.0.1", port: 0 },
    logLevel: "info",
    // A merchant's subscription: its own payments (the demo's first relayer is the payee of a third
    // of them), pre-confirmed and confirmed. One subscription for every event of every payment is
    // delivered in order, one request at a time, and falls behind at this rate.
    webhooks: [
      {
        url: receiverUrl,
        secretEnv: "BENCH_SOAK_WEBHOOK_SECRET",
        events: ["payment.preconfirmed", "payment.confirmed"],
        addresses: [MERCHANT],
        allowPrivateTargets: true,
      },
    ],
  }),
);
const daemon = spawn(CLI, ["start", "--config", config], {
  env: { ...process.env, BENCH_SOAK_WEBHOOK_SECRET: "soak" },
  stdio: ["ignore", "pipe", "pipe"],
});
let output = "";
let daemonWarnings = 0;
let metricsUrl: string | undefined;
let caughtUp = false;
const onOutput = (chunk: Buffer) => {
  const text = chunk.toString();
  // pino levels: 40 warn, 50 error, 60 fatal.
  daemonWarnings += (text.match(/"level":(4|5|6)0/g) ?? []).length;
  const announced = text
    .split("\n")
    .find((line) => line.includes('"Started metrics and health server"'));
  metricsUrl ??=
    announced === undefined ? undefined : /"url":"(http:\/\/[^"]+)"/.exec(announced)?.[1];
  caughtUp ||= text.includes("Caught up with the head");
  output = (output + text).slice(-OUTPUT_TAIL);
};
daemon.stdout.on("data", onOutput);
daemon.stderr.on("data", onOutput);
let exited: number | null | undefined;
daemon.on("exit", (code) => (exited = code));

const failed = (why: string) => new Error(`soak: ${why}\n--- daemon output (tail) ---\n${output}`);
const publicClient = createPublicClient({ transport: http(devnet.httpUrl) });
/** The traffic's senders: buyers and relayers (demoTraffic.ts), and the account whose payments are dropped. */
const senders = devnet.privateKeys.slice(1, 10).map((key) => privateKeyToAccount(key).address);
const minedNonces = async () =>
  (
    await Promise.all(
      senders.map((address) => publicClient.getTransactionCount({ address, blockTag: "latest" })),
    )
  ).reduce((a, n) => a + n, 0);
let nonceBaseline = 0;
let trafficErrors = 0;
let traffic: { stop: () => void } | undefined;

const megabytes = (path: string) => {
  try {
    return statSync(path).size / 2 ** 20;
  } catch {
    return 0; // no WAL between checkpoints
  }
};

mkdirSync(RESULTS, { recursive: true });
const csvPath = join(RESULTS, `soak-${STARTED_UTC.slice(0, 16).replace(":", "")}Z.csv`);
writeFileSync(csvPath, SOAK_CSV_HEADER);
const samples: SoakSample[] = [];

async function sample(minute: number): Promise<void> {
  const body = await (await fetch(`${metricsUrl}/metrics`)).text();
  const [load1, load5] = loadavg();
  const row: SoakSample = {
    minute,
    utc: new Date().toISOString(),
    load1: load1!,
    load5: load5!,
    rssMb: metricSum(body, "flashindex_process_resident_memory_bytes") / 2 ** 20,
    heapUsedMb: metricSum(body, "flashindex_nodejs_heap_size_used_bytes") / 2 ** 20,
    activeHandles: metricSum(body, "flashindex_nodejs_active_handles_total"),
    activeResources: metricSum(body, "flashindex_nodejs_active_resources_total"),
    eventLoopP99Ms: metricSum(body, "flashindex_nodejs_eventloop_lag_p99_seconds") * 1_000,
    dbMb: megabytes(database),
    walMb: megabytes(`${database}-wal`),
    cpuSeconds: processCpuSeconds(daemon.pid!),
    paymentsMined: (await minedNonces()) - nonceBaseline,
    logsIndexed: metricSum(body, "flashindex_logs_indexed_total"),
    preconfLogs: metricSum(body, "flashindex_preconf_logs_total"),
    webhooksReceived,
    webhookBacklog: metricSum(body, "flashindex_webhook_backlog_deliveries"),
    trafficErrors,
    daemonWarnings,
  };
  samples.push(row);
  appendFileSync(csvPath, soakCsvRow(row));
  console.error(`soak: minute ${minute}: ${JSON.stringify(row)}`);
}

try {
  for (const deadline = Date.now() + 120_000; !(caughtUp && metricsUrl !== undefined);) {
    if (exited !== undefined) throw failed(`the daemon exited ${exited} before catching up`);
    if (Date.now() > deadline) throw failed("the daemon did not catch up within 120 s");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  nonceBaseline = await minedNonces();
  traffic = startDemoTraffic(devnet, {
    paymentsPerSecond: PAYMENTS_PER_SECOND,
    onError: () => void trafficErrors++,
  });
  // Minute 0 is the baseline (and resets the event-loop histogram, which each scrape does).
  await sample(0);
  const start = Date.now();
  for (let minute = 1; minute * SAMPLE_MS <= MINUTES * 60_000; minute++) {
    await new Promise((resolve) => setTimeout(resolve, start + minute * SAMPLE_MS - Date.now()));
    if (exited !== undefined) throw failed(`the daemon exited ${exited} at minute ${minute}`);
    await sample((minute * SAMPLE_MS) / 60_000);
  }
} finally {
  traffic?.stop();
  daemon.kill("SIGTERM");
  if (exited === undefined) await new Promise((resolve) => daemon.once("exit", resolve));
  receiver.close();
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}

const verdict = judgeSoak(samples, WARMUP_MINUTES);
const machine = `${cpus().length} × ${cpus()[0]?.model ?? "unknown cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
console.log(
  JSON.stringify({
    startedUtc: STARTED_UTC,
    minutes: MINUTES,
    warmupMinutes: WARMUP_MINUTES,
    targetPaymentsPerSecond: PAYMENTS_PER_SECOND,
    machine,
    csv: csvPath,
    daemonExit: exited,
    ...verdict,
  }),
);
