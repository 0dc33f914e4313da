import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import WebSocket from "ws";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet } from "../../src/devnet/startDevnet.js";
import { followDevnet } from "./devnetDaemonConfig.js";

/**
 * Webhook latency on the devnet: from a `pendingLogs` notification to the receiver's 2xx for the
 * `payment.preconfirmed` webhook it causes (goal: p99 under 100 ms). A side subscriber in this
 * process takes the notification time from the same devnet stream the daemon reads, and a local
 * receiver in this process answers 204 and takes the arrival time: one clock for both ends. The
 * daemon is the real CLI (`start`), with its webhook sender, in its own process.
 *
 * Run: `npx tsx scripts/bench/webhookLatency.ts` (or the built dist/scripts/bench/webhookLatency.js).
 * Prints one JSON object. BENCH_WEBHOOK_SECONDS (default 20) sets how long payments are sent, at
 * BENCH_WEBHOOK_PAYMENTS_PER_SECOND (default 5).
 */
const DURATION_MS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 20) * 1_000;
const PAYMENTS_PER_SECOND = Number(process.env.BENCH_WEBHOOK_PAYMENTS_PER_SECOND ?? 5);
/** Time the last webhooks get to arrive after the last payment, in ms. */
const DRAIN_MS = 3_000;
const SHOP = "0x000000000000000000000000000000000000c0de";
const now = () => performance.timeOrigin + performance.now();
const MAIN = join(
  import.meta.dirname,
  "..",
  "..",
  "src",
  "cli",
  import.meta.filename.endsWith(".ts") ? "main.ts" : "main.js",
);

const devnet = await startDevnet({ blockTimeMs: 2_000, flashblockIntervalMs: 200 });
const dir = mkdtempSync(join(tmpdir(), "flashindex-webhook-bench-"));
const notifiedAt = new Map<string, number>();
const answeredAt = new Map<string, number>();

// Answers first, then parses: the receiver's own work is not the daemon's latency.
const receiver = createServer();
receiver.on("request", (request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    response.writeHead(204).end();
    const at = now();
    if (request.headers["flashindex-event-type"] !== "payment.preconfirmed") return;
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
      log: { tx_hash: string; log_index: number };
    };
    answeredAt.set(body.log.tx_hash, Math.min(answeredAt.get(body.log.tx_hash) ?? Infinity, at));
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const side = new WebSocket(devnet.wsUrl);
await new Promise((resolve, reject) => side.once("open", resolve).once("error", reject));
side.send(
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "eth_subscribe",
    params: ["pendingLogs", { address: devnet.token }],
  }),
);
side.on("message", (data: Buffer) => {
  const at = now();
  const message = JSON.parse(data.toString()) as { method?: string; params?: { result: unknown } };
  if (message.method !== "eth_subscription") return;
  const result = message.params!.result;
  for (const log of (Array.isArray(result) ? result : [result]) as Array<{
    transactionHash: string;
  }>)
    if (!notifiedAt.has(log.transactionHash.toLowerCase()))
      notifiedAt.set(log.transactionHash.toLowerCase(), at);
});

const config = join(dir, "bench.json");
writeFileSync(
  config,
  JSON.stringify({
    ...followDevnet(devnet),
    finality: { depth: 6 },
    database: { path: join(dir, "bench.db") },
    metrics: { enabled: false },
    logLevel: "warn",
    webhooks: [
      {
        url: receiverUrl,
        secretEnv: "BENCH_WEBHOOK_SECRET",
        events: ["payment.preconfirmed"],
        allowPrivateTargets: true,
      },
    ],
  }),
);
const daemon = spawn(
  process.execPath,
  [...(MAIN.endsWith(".ts") ? ["--import", "tsx"] : []), MAIN, "start", "--config", config],
  {
    env: { ...process.env, BENCH_WEBHOOK_SECRET: "bench", FLASHINDEX_LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  },
);
let daemonOut = "";
daemon.stdout.on("data", (chunk: Buffer) => (daemonOut += chunk.toString()));
const deadline = Date.now() + 60_000;
while (!daemonOut.includes("Caught up with the head")) {
  if (Date.now() > deadline) throw new Error("the daemon did not catch up within 60 s");
  await new Promise((resolve) => setTimeout(resolve, 50));
}

const account = privateKeyToAccount(devnet.privateKeys[1]!);
const wallet = createWalletClient({ account, transport: http(devnet.httpUrl) });
let nonce = await createPublicClient({ transport: http(devnet.httpUrl) }).getTransactionCount({
  address: account.address,
  blockTag: "pending",
});
const sent: string[] = [];
for (const end = Date.now() + DURATION_MS; Date.now() < end;) {
  const hash = await wallet.writeContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "emitTransfers",
    args: [[SHOP], [1n]],
    chain: null,
    gas: 200_000n,
    nonce: nonce++,
  });
  sent.push(hash.toLowerCase());
  await new Promise((resolve) => setTimeout(resolve, 1_000 / PAYMENTS_PER_SECOND));
}
await new Promise((resolve) => setTimeout(resolve, DRAIN_MS));

daemon.kill("SIGTERM");
await new Promise((resolve) => daemon.once("exit", resolve));
side.close();
receiver.close();
await devnet.stop();
rmSync(dir, { recursive: true, force: true });

const latencies = sent.flatMap((tx) => {
  const from = notifiedAt.get(tx);
  const to = answeredAt.get(tx);
  return from === undefined || to === undefined ? [] : [to - from];
});
latencies.sort((a, b) => a - b);
const pct = (p: number) =>
  Math.round(
    (latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] ??
      Number.NaN) * 10,
  ) / 10;
console.log(
  JSON.stringify({
    payments: sent.length,
    notified: sent.filter((tx) => notifiedAt.has(tx)).length,
    delivered: sent.filter((tx) => answeredAt.has(tx)).length,
    p50Ms: pct(50),
    p99Ms: pct(99),
    maxMs: pct(100),
    goalP99Ms: 100,
  }),
);
