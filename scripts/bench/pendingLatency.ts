import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { WebSocketServer } from "ws";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { createWsSubscription } from "../../src/chain/wsSubscription.js";
import { parseConfig } from "../../src/config/parseConfig.js";
import { createLogger } from "../../src/ops/logger.js";
import { createHealth } from "../../src/ops/health.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createShutdown } from "../../src/ops/shutdown.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createPreconfirmedIndexer } from "../../src/sync/preconfirmed/preconfirmedIndexer.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { startSyntheticRpcProcess } from "./syntheticRpcServer.js";

/**
 * Pre-confirmation latency: a Flashblocks-like emitter in a child process sends `pendingLogs`
 * notifications (one log each, in a burst every 200 ms flashblock) stamped with the send time; the
 * indexer's pending path commits each one, and we take commit time minus send time. The second
 * pass does the same while a backfill runs in the same process (a synthetic RPC in its own process
 * serving 4,000,000 Transfer logs, windows committed on the writer thread), as a daemon catching up
 * on a fresh deploy does.
 */
const TOKEN = "0x00000000000000000000000000000000000f1a54";
const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const FLASHBLOCK_MS = 200;
const DURATION_MS = Number(process.env.BENCH_LATENCY_SECONDS ?? 10) * 1_000;
const now = () => performance.timeOrigin + performance.now();
/**
 * The concurrent backfill's chain: 200,000 blocks of 20 logs (4,000,000), more than the measurement
 * can index (about a million in 10 s by now): a backfill that ended inside it would add its end
 * (the reader indexes' build) to the latency measured beside a running one.
 */
const BACKFILL_BLOCKS = 200_000;
/**
 * The blocks whose answers the synthetic node renders before the measurement (1,500,000 logs, about
 * 1 GB of its memory): more than the backfill reaches in 10 s, so the node's CPU, which a real node
 * spends on another machine, does not take the indexer's (the rest would be built per request).
 */
const PRERENDERED_BLOCKS = 75_000;

if (process.argv[2] === "emit") {
  // Child: the emitter. Args: emit <logsPerSecond>; prints its URL, then streams once a client subscribes.
  const rate = Number(process.argv[3]);
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  wss.on("listening", () => process.send?.({ port: (wss.address() as { port: number }).port }));
  wss.on("connection", (socket) => {
    socket.on("message", (data: Buffer) => {
      const request = JSON.parse(data.toString()) as { id: number };
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: "0x1" }));
      let block = 1_000;
      let n = 0;
      const perFlashblock = Math.round((rate * FLASHBLOCK_MS) / 1_000);
      const timer = setInterval(() => {
        block += n % 10 === 9 ? 1 : 0;
        for (let i = 0; i < perFlashblock; i++, n++) {
          const log = {
            address: TOKEN,
            topics: [
              TRANSFER,
              `0x${"0".repeat(24)}${"a".repeat(40)}`,
              `0x${"0".repeat(24)}${"b".repeat(40)}`,
            ],
            data: `0x${(n + 1).toString(16).padStart(64, "0")}`,
            blockNumber: `0x${block.toString(16)}`,
            blockHash: `0x${"0".repeat(64)}`,
            blockTimestamp: "0x6553f100",
            transactionHash: `0x${n.toString(16).padStart(64, "0")}`,
            transactionIndex: `0x${(i + 1).toString(16)}`,
            logIndex: `0x${n.toString(16)}`,
            removed: false,
            x_sent_at: now(),
          };
          socket.send(
            JSON.stringify({
              jsonrpc: "2.0",
              method: "eth_subscription",
              params: { subscription: "0x1", result: log },
            }),
          );
        }
      }, FLASHBLOCK_MS);
      socket.on("close", () => clearInterval(timer));
    });
  });
} else {
  const rates = [100, 1_000];
  const results = [];
  for (const rate of rates) results.push(await measure(rate, false));
  results.push(await measure(1_000, true));
  console.log(JSON.stringify(results));
}

async function measure(rate: number, withBackfill: boolean) {
  const child = fork(import.meta.filename, ["emit", String(rate)], { execArgv: [] });
  const port = await new Promise<number>((resolve) =>
    child.once("message", (m: { port: number }) => resolve(m.port)),
  );
  const rpc = withBackfill
    ? await startSyntheticRpcProcess(BACKFILL_BLOCKS, 20, TOKEN, {
        blocks: PRERENDERED_BLOCKS,
        transactions: false,
      })
    : undefined;
  const dir = mkdtempSync(join(tmpdir(), "flashindex-latency-"));
  const config = parseConfig(
    // Attribution runs after the commit and needs a node; this measures the pending path alone.
    {
      chainId: 8453,
      rpc: { http: [rpc?.url ?? "http://127.0.0.1:9"], timeoutMs: 120_000 },
      attribution: { enabled: false },
      tokens: [{ address: TOKEN, startBlock: 0 }],
      backfill: { windowBlocks: 1_000, concurrency: 4 },
      // Only the subscription is measured: no poll, so no watchdog reading a pending view.
      realtime: { pendingPollIntervalMs: 0 },
      database: { path: join(dir, "p.db") },
      logLevel: "warn",
    },
    "bench",
  );
  const shutdown = createShutdown();
  const logger = createLogger("warn", pino.destination(2));
  const metrics = createMetrics({ defaultMetrics: false });
  const store = await openStore(config, { metrics });
  const deps = createSyncDeps(
    {
      config,
      logger,
      metrics,
      shutdown,
      client: createRpcClient({ config, logger, metrics, shutdown }),
    },
    store,
  );
  const latencies: number[] = [];
  const sentAt = new Map<string, number>();
  const pending = createPreconfirmedIndexer({
    ...deps,
    health: createHealth(),
    lastCanonicalBlock: () => 0,
    canonicalHashAt: () => undefined,
    onCanonicalHead: () => undefined,
    onStored: (rows) => {
      const committed = now();
      for (const row of rows) latencies.push(committed - sentAt.get(row.transactionHash)!);
    },
  });
  createWsSubscription(deps, {
    url: `ws://127.0.0.1:${port}`,
    name: "pendingLogs",
    params: ["pendingLogs", {}],
    initialDelayMs: 50,
    maxDelayMs: 500,
    onNotification: (result, receivedAt) => {
      const log = result as { transactionHash: string; x_sent_at: number };
      sentAt.set(log.transactionHash, log.x_sent_at);
      pending.onNotification(result, receivedAt);
    },
  });
  const last = BACKFILL_BLOCKS - 1;
  // As the daemon's catch-up runs it (sync/head/headFollower.ts): beside live writes.
  const backfilling = withBackfill
    ? backfill(deps, { from: 0, to: last, finalized: last }, { mode: "daemon" }).catch(
        () => undefined,
      )
    : undefined;
  await new Promise((resolve) => setTimeout(resolve, DURATION_MS));
  await shutdown.kill();
  await backfilling;
  child.kill();
  rpc?.stop();
  const stored = (await store.countRowsByStatus(config.tokens[0]!.key)).reduce(
    (sum, r) => sum + r.transfers + r.authorizations,
    0,
  );
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ??
    Number.NaN;
  return {
    rate,
    withBackfill,
    samples: latencies.length,
    stored,
    p50Ms: pct(50),
    p99Ms: pct(99),
    maxMs: latencies.at(-1) ?? Number.NaN,
  };
}
