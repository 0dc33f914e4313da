import { createOrderUpkeep, ORDER_UPKEEP_INTERVAL_MS } from "../../authorization/orderUpkeep.js";
import { registerConfiguredWallets } from "../../attribution/registerWallets.js";
import { createTrailingAttribution } from "../../attribution/trailingAttribution.js";
import { createRegistrationClient } from "../../attribution/registrationClient.js";
import { getChainTips } from "../../chain/finality.js";
import { BaseError, FatalError, RetryableError, ShutdownError } from "../../errors/base.js";
import { DamagedAnswerError, PrunedHistoryError } from "../../errors/rpc.js";
import { WriterEpochLostError } from "../../errors/writerEpoch.js";
import { WriterLockLostError } from "../../errors/writerLock.js";
import { createHealth } from "../../ops/health.js";
import { startHeartbeat } from "../../ops/heartbeat.js";
import { startOpsServer } from "../../ops/httpServer.js";
import { createStatusPage } from "../../ops/statusPage.js";
import { sleep, type Shutdown } from "../../ops/shutdown.js";
import { withRetry } from "../../ops/withRetry.js";
import { acquireStoreWriterLock } from "../../store/openStore.js";
import type { WriterLock } from "../../store/types.js";
import { backfill } from "../../sync/historical/backfill.js";
import { createSyncDeps, type SyncDeps } from "../../sync/syncDeps.js";
import { createPreconfirmedIndexer } from "../../sync/preconfirmed/preconfirmedIndexer.js";
import { createPreconfirmedBackoff } from "../../sync/preconfirmed/preconfirmedBackoff.js";
import { createHeadFollower, type HeadFollowerDeps } from "../../sync/head/headFollower.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { contextFor, createObservability } from "../context.js";
import { openIndex } from "../openIndex.js";
import type { Common } from "../../common.js";
import { startConfiguredDevnet } from "../devnetLauncher.js";
import { loadCommandSettings } from "../resolveConfig.js";
import { waitForWriterLock } from "../standby.js";
import { createLogger } from "../../ops/logger.js";
import { pino } from "pino";
import type { ConfigSettings } from "../../config/types.js";
import { readWebhookSecrets } from "../../webhooks/secrets.js";
import { createWebhookSender } from "../../webhooks/sender.js";

/** How often the daemon looks for newly final blocks (Base makes one every 2 s). */
export const FOLLOW_POLL_INTERVAL_MS = 2_000;
/** Pause after a temporary failure (retries exhausted) before the daemon tries again. */
export const FAILURE_BACKOFF_MS = 30_000;

const OPTIONS = {
  standby: { type: "boolean", description: "when another process writes the database, wait and take over once it stops (instead of exiting 2)" },
} as const;

export const START_COMMAND = defineCommand({
  name: "start",
  summary: "run the daemon: backfill, then keep up with the chain",
  description: `Runs the daemon: backfills every configured token from its start block, then follows the chain:
new blocks (newHeads over rpc.ws, or polling), reorgs (parent hashes, the logs subscription's
removed flag), and pre-confirmed logs (the "pending" view and the pendingLogs subscription).
Serves /metrics, /healthz and /readyz. SIGINT/SIGTERM finish the write in flight, close the
database and exit 0; the same signal again within 1 s is the same request (npm start forwards
its copy of a Ctrl-C), a second one after that exits at once. On every way out the bundled
devnet's chain is saved before its anvil stops.
One writer per database: while another start or backfill writes the same file, start exits 2 at
once, naming the other process; with --standby it waits instead, and takes over when that one
stops. A database filled from another chain (another chain id or genesis block) is refused with
exit 2 before anything is written.
With a config that runs the bundled devnet, the devnet starts first and its URLs are recorded
beside the database (<database>.endpoints.json) while it runs, for the other commands.
Logs go to stdout as JSON lines.`,
  options: OPTIONS,
  epilog: `Exit codes: 0 stopped by SIGINT/SIGTERM, 2 bad usage or config (also: database busy, foreign or
from another chain), 1 fatal error, 75 temporary failure (the RPC stayed unreachable at start-up; on
Postgres also: another writer took over).`,
  run: runStartCommand,
});

async function runStartCommand({ values }: ParsedCommand<typeof OPTIONS>, shutdown: Shutdown): Promise<void> {
  const settings = loadCommandSettings(values);
  // Taken before the devnet starts: its chain state lives next to the database, and is ours alone too.
  const lock =
    values.standby === true
      ? await waitForWriterLock(settings, createLogger(settings.logLevel, pino.destination({ dest: 1, sync: true })).child({ component: "standby" }), shutdown)
      : await acquireStoreWriterLock(settings, "start");
  try {
    await runDaemon(settings, lock, shutdown);
  } finally {
    lock.release();
  }
}

/** Everything `start` does while it holds the database's writer lock. */
async function runDaemon(settings: ConfigSettings, lock: WriterLock, shutdown: Shutdown): Promise<void> {
  const observability = createObservability(settings, shutdown, "stdout");
  // First: a taken metrics port stops the daemon before a devnet starts or the database is opened.
  const webhookSecrets = readWebhookSecrets(settings.webhooks);
  const health = createHealth();
  const { metrics: metricsConfig } = settings;
  const server = metricsConfig.enabled ? await startOpsServer({ ...observability, health }, metricsConfig) : undefined;
  if (server !== undefined) shutdown.add(() => server.close());
  // The devnet (when the config runs one) is up before the context: its one RPC client is built on the real URLs.
  const { config, chainEndsAt } = await startConfiguredDevnet(settings, observability, shutdown);
  const context = contextFor(config, shutdown, observability);

  // The composition root: the store and the services every stage shares are built here, once.
  const { store, tips } = await openIndex(context, { lock, chainEndsAt });
  context.metrics.measureDatabaseSize(() => store.sizeBytes());
  context.metrics.measureContradictedSettlements(() => store.settlements.contradicted());
  const deps = createSyncDeps(context, store);
  registerConfiguredWallets(deps, createRegistrationClient(context.config.registration));
  const orderUpkeep = createOrderUpkeep(deps);
  let upkeepRunning = false;
  const orderTimer = setInterval(() => {
    if (upkeepRunning) return;
    upkeepRunning = true;
    orderUpkeep
      .tick(Date.now())
      .catch((error: unknown) => context.logger.error({ msg: "Failed order upkeep", error: error instanceof Error ? error.message : String(error) }))
      .finally(() => (upkeepRunning = false));
  }, ORDER_UPKEEP_INTERVAL_MS);
  shutdown.add(() => clearInterval(orderTimer));
  // Loaded here: the relay needs viem, which the daemon's start does not otherwise load (startupImports.test.ts).
  const { startSettlement } = await import("../../settle/startFacilitator.js");
  await startSettlement({ ...deps, store });
  // The status page and the webhook outbox go through the store, on either backend.
  if (metricsConfig.statusPage) server?.setStatusPage(createStatusPage({ ...context, store }));
  const webhookSender = (await createWebhookSender({ ...context, store }, webhookSecrets, tips.head)).run();
  shutdown.add(() => webhookSender);
  // Attribution a rate-limited backfill left owed (this one's catch-ups, or an earlier run's) is paid beside live work, one request at a time.
  if (deps.attributor !== undefined) {
    const trailing = createTrailingAttribution({ ...deps, attributor: deps.attributor }, { mode: "daemon" }).runForever();
    shutdown.add(() => trailing);
  }
  const heartbeat = startHeartbeat({ ...context, health });
  shutdown.add(() => heartbeat.stop());
  context.logger.info({ msg: "Started flashindex", chain_id: context.config.chainId, database: store.location, tokens: context.config.tokens.length });
  try {
    if (context.config.realtime.enabled) await followRealtime({ ...deps, health });
    else await followFinality(deps, health);
  } catch (error) {
    if (error instanceof ShutdownError) return;
    recordHalt(context, error, "fatal", "Stopped syncing");
    throw error;
  } finally {
    // Stop every source first (subscriptions, devnet, timers), so nothing writes after the close.
    await shutdown.kill();
    await store.close();
    context.logger.info({ msg: "Stopped flashindex" });
  }
}

/** Backfills to the head, then follows new blocks, reorgs and pre-confirmations until shutdown. */
async function followRealtime(deps: HeadFollowerDeps): Promise<void> {
  // One pause for every read of the pending view: the poll, the watchdog and the head path's drop check.
  const preconfirmedBackoff = createPreconfirmedBackoff(deps.config.realtime.pendingPollIntervalMs);
  const follower = createHeadFollower({ ...deps, preconfirmedBackoff });
  const pending = createPreconfirmedIndexer({
    ...deps,
    preconfirmedBackoff,
    lastCanonicalBlock: follower.lastAppliedBlock,
    canonicalHashAt: follower.hashAt,
    onCanonicalHead: follower.onApplied,
  });
  const { realtime, rpc } = deps.config;
  const running: Array<Promise<void>> = [follower.run()];
  if (realtime.pendingPollIntervalMs > 0) running.push(pending.pollForever(), pending.watchForever());
  if (rpc.preconfWs !== undefined) pending.subscribe(rpc.preconfWs);
  await Promise.race(running);
}

/** With realtime off: backfills to the final block, then again whenever it moves, until shutdown. */
async function followFinality(context: SyncDeps, health: ReturnType<typeof createHealth>): Promise<void> {
  const { metrics, shutdown } = context;
  const catchUpOnce = async () => {
    shutdown.throwIfKilled();
    const tips = await getChainTips(context.client, context.config.finality);
    metrics.chainHeadBlock.set(tips.head);
    health.markHeadSeen();
    await backfill(context, { to: tips.finalized, finalized: tips.finalized });
    health.markBackfillCaughtUp(true);
  };
  for (;;) {
    // The daemon outlives a flaky provider: committed windows stay, the next round resumes.
    await withRetry(catchUpOnce, {
      retryCount: Number.POSITIVE_INFINITY,
      shouldRetry: ({ error }) => error instanceof RetryableError,
      delay: FAILURE_BACKOFF_MS,
      onRetry: ({ error, delayMs }) => recordHalt(context, error, "error", "Failed to keep up, retrying later", { retry_in_ms: delayMs }),
      signal: shutdown.signal,
    });
    await sleep(FOLLOW_POLL_INTERVAL_MS, shutdown.signal);
  }
}

/**
 * Logs why syncing stopped (fatal when the daemon exits, error when it retries later) and counts it
 * in flashindex_sync_halts_total: an operator's alert must not depend on reading the last log line.
 */
function recordHalt(context: Common, error: unknown, level: "fatal" | "error", msg: string, extra: Record<string, unknown> = {}): void {
  const reason = haltReason(error);
  context.metrics.syncHalts.inc({ reason });
  context.logger[level]({ msg, reason, error: error instanceof BaseError ? error.shortMessage : String(error), ...extra });
}

/** A low-cardinality label for the metric: the innermost known cause. */
function haltReason(error: unknown): string {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof DamagedAnswerError) return "damaged_answer";
    if (e instanceof PrunedHistoryError) return "pruned_history";
    if (e instanceof WriterLockLostError || e instanceof WriterEpochLostError) return "writer_lost";
  }
  if (error instanceof FatalError) return "fatal";
  if (error instanceof RetryableError) return "rpc_unavailable";
  return "unexpected";
}
