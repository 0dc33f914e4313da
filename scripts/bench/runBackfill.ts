import { pino } from "pino";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { getChainTips } from "../../src/chain/finality.js";
import { parseConfig } from "../../src/config/parseConfig.js";
import { createLogger } from "../../src/ops/logger.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createShutdown } from "../../src/ops/shutdown.js";
import { openDatabase } from "../../src/store/openDatabase.js";
import { backfill } from "../../src/sync/backfill.js";

/**
 * One benchmark run in a fresh process (so peak RSS is this run's alone): backfills the chain
 * behind the config given as JSON in argv[2] and prints one JSON line of figures.
 */
const config = parseConfig(JSON.parse(process.argv[2]!), "bench");
const shutdown = createShutdown();
// Logs go to stderr: stdout carries only the one JSON line of figures.
const logger = createLogger(config.logLevel, pino.destination(2));
const metrics = createMetrics({ defaultMetrics: false });
const client = createRpcClient({ config, logger, metrics, shutdown });
const tips = await getChainTips(client, config.finality);
const db = openDatabase(config.database.path, config.chainId);
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 100);
const summary = await backfill({ config, logger, metrics, shutdown, client, db }, { to: tips.finalized, finalized: tips.finalized });
clearInterval(sampler);
db.close();
await shutdown.kill();
const maxRssBytes = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
console.log(JSON.stringify({ logs: summary.logs, blocks: summary.blocks, durationMs: summary.durationMs, peakRssMb: Math.round(maxRssBytes / 1024 / 1024) }));
