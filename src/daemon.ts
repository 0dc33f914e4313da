/**
 * The daemon, assembled from its parts: the composition root, and the file to open first.
 * `flashindex start` (cli/commands/startCommand.ts) only parses its flags and calls runDaemon.
 *
 * What starts, in this order, and where each part lives:
 *  1. The database's writer lock (store/openStore.ts; with --standby, cli/standby.ts waits for it).
 *  2. The ops server: /metrics, /healthz, /readyz and / (ops/httpServer.ts). First, so a taken port
 *     stops the daemon before a devnet starts or the database opens.
 *  3. The bundled devnet, when the config runs one (cli/devnetLauncher.ts over devnet/); then the
 *     bag every part takes first (cli/context.ts: config, logger, metrics, shutdown, and the one
 *     RPC client, chain/rpcClient.ts).
 *  4. The store, checked against the chain (cli/openIndex.ts over store/), and what the sync stages
 *     share, built once (sync/syncDeps.ts: the store and the attributor of attribution/).
 *  5. Background work beside the sync: builder-code registration (attribution/registerWallets.ts),
 *     order upkeep (authorization/orderUpkeep.ts), the x402 facilitator (settle/), the status page
 *     (statusPage/), the webhook outbox (webhooks/), owed attribution
 *     (attribution/trailingAttribution.ts) and the heartbeat (ops/heartbeat.ts).
 *  6. The sync, until shutdown: with realtime on, the head follower (sync/head/headFollower.ts: backfill,
 *     then new blocks and reorgs) beside the pre-confirmed view (sync/preconfirmed/preconfirmedIndexer.ts); with it off,
 *     backfill to the final block (sync/historical/backfill.ts), again whenever it moves.
 * On every way out, shutdown (ops/shutdown.ts) stops each source first, then the store closes.
 */
import { pino } from "pino";
import { registerConfiguredWallets } from "./attribution/registerWallets.js";
import { createRegistrationClient } from "./attribution/registrationClient.js";
import { createTrailingAttribution } from "./attribution/trailingAttribution.js";
import { createOrderUpkeep, ORDER_UPKEEP_INTERVAL_MS } from "./authorization/orderUpkeep.js";
import { getChainTips } from "./chain/finality.js";
import { contextFor, createObservability } from "./cli/context.js";
import { startConfiguredDevnet } from "./cli/devnetLauncher.js";
import { openIndex } from "./cli/openIndex.js";
import { waitForWriterLock } from "./cli/standby.js";
import type { Common } from "./common.js";
import type { ConfigSettings } from "./config/types.js";
import { BaseError, FatalError, RetryableError, ShutdownError, walkCauses } from "./errors/base.js";
import { DamagedAnswerError, PrunedHistoryError } from "./errors/rpc.js";
import { WriterEpochLostError } from "./errors/writerEpoch.js";
import { WriterLockLostError } from "./errors/writerLock.js";
import { createHealth } from "./ops/health.js";
import { startHeartbeat } from "./ops/heartbeat.js";
import { startOpsServer } from "./ops/httpServer.js";
import { createLogger } from "./ops/logger.js";
import { sleep, type Shutdown } from "./ops/shutdown.js";
import { withRetry } from "./ops/withRetry.js";
import { createStatusPage } from "./statusPage/statusPage.js";
import { acquireStoreWriterLock } from "./store/openStore.js";
import type { WriterLock } from "./store/types.js";
import { backfill } from "./sync/historical/backfill.js";
import { createPreconfirmedIndexer } from "./sync/preconfirmed/preconfirmedIndexer.js";
import { createPreconfirmedBackoff } from "./sync/preconfirmed/preconfirmedBackoff.js";
import { createHeadFollower, type HeadFollowerDeps } from "./sync/head/headFollower.js";
import { createSyncDeps, type SyncDeps } from "./sync/syncDeps.js";
import { readWebhookSecrets } from "./webhooks/secrets.js";
import { createWebhookSender } from "./webhooks/sender.js";

/** How often the daemon looks for newly final blocks (Base makes one every 2 s). */
export const FOLLOW_POLL_INTERVAL_MS = 2_000;
/** Pause after a temporary failure (retries exhausted) before the daemon tries again. */
export const FAILURE_BACKOFF_MS = 30_000;

export type DaemonOptions = {
  /**
   * When another process writes the database: wait and take over once it stops (instead of exiting
   * 2).
   */
  standby: boolean;
};

/**
 * Runs the daemon until shutdown: takes the database's writer lock, then starts every part under
 * it.
 */
export async function runDaemon(
  settings: ConfigSettings,
  options: DaemonOptions,
  shutdown: Shutdown,
): Promise<void> {
  // Taken before the devnet starts: its chain state lives next to the database, and is ours alone
  // too.
  const lock = options.standby
    ? await waitForWriterLock(
        settings,
        createLogger(settings.logLevel, pino.destination({ dest: 1, sync: true })).child({
          component: "standby",
        }),
        shutdown,
      )
    : await acquireStoreWriterLock(settings, "start");
  try {
    await runWithLock(settings, lock, shutdown);
  } finally {
    lock.release();
  }
}

/** Everything the daemon does while it holds the database's writer lock. */
async function runWithLock(
  settings: ConfigSettings,
  lock: WriterLock,
  shutdown: Shutdown,
): Promise<void> {
  const observability = createObservability(settings, shutdown, "stdout");
  // First: a taken metrics port stops the daemon before a devnet starts or the database is opened.
  const webhookSecrets = readWebhookSecrets(settings.webhooks);
  const health = createHealth();
  const { metrics: metricsConfig } = settings;
  const server = metricsConfig.enabled
    ? await startOpsServer({ ...observability, health }, metricsConfig)
    : undefined;
  if (server !== undefined) shutdown.add(() => server.close());
  // The devnet (when the config runs one) is up before the context: its one RPC client is built on
  // the real URLs.
  const { config, chainEndsAt } = await startConfiguredDevnet(settings, observability, shutdown);
  const context = contextFor(config, shutdown, observability);

  // The store and the services every stage shares are built here, once.
  const { store, tips } = await openIndex(context, { lock, chainEndsAt });
  context.metrics.measureDatabaseSize(() => store.sizeBytes());
  context.metrics.measureContradictedSettlements(() => store.settlements.contradicted());
  const deps = createSyncDeps(context, store);
  registerConfiguredWallets(deps, createRegistrationClient(context.config.registration));
  startOrderUpkeep(deps);
  // Loaded here: the relay needs viem, which the daemon's start does not otherwise load
  // (startupImports.test.ts).
  const { startSettlement } = await import("./settle/startFacilitator.js");
  const { relay } = await startSettlement({ ...deps, store });
  // The status page and the webhook outbox go through the store, on either backend.
  if (metricsConfig.statusPage) server?.setStatusPage(createStatusPage({ ...context, store }));
  const webhookSender = (
    await createWebhookSender({ ...context, store }, webhookSecrets, tips.head)
  ).run();
  shutdown.add(() => webhookSender);
  // Attribution a rate-limited backfill left owed (this one's catch-ups, or an earlier run's) is
  // paid beside live work, one request at a time.
  if (deps.attributor !== undefined) {
    const trailing = createTrailingAttribution(
      { ...deps, attributor: deps.attributor },
      { mode: "daemon" },
    ).runForever();
    shutdown.add(() => trailing);
  }
  const heartbeat = startHeartbeat({ ...context, health });
  shutdown.add(() => heartbeat.stop());
  context.logger.info({
    msg: "Started flashindex",
    chain_id: context.config.chainId,
    database: store.location,
    tokens: context.config.tokens.length,
  });
  try {
    if (context.config.realtime.enabled)
      await followRealtime({ ...deps, health }, () => relay.wake());
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

/**
 * Expires and captures merchant orders every ORDER_UPKEEP_INTERVAL_MS, one tick at a time, until
 * shutdown.
 */
function startOrderUpkeep(deps: SyncDeps): void {
  const orderUpkeep = createOrderUpkeep(deps);
  let upkeepRunning = false;
  const orderTimer = setInterval(() => {
    if (upkeepRunning) return;
    upkeepRunning = true;
    orderUpkeep
      .tick(Date.now())
      .catch((error: unknown) =>
        deps.logger.error({
          msg: "Failed order upkeep",
          error: error instanceof Error ? error.message : String(error),
        }),
      )
      .finally(() => (upkeepRunning = false));
  }, ORDER_UPKEEP_INTERVAL_MS);
  deps.shutdown.add(() => clearInterval(orderTimer));
}

/**
 * Backfills to the head, then follows new blocks, reorgs and pre-confirmations until shutdown.
 * `onNews`: after each pre-confirmed commit and each canonical head applied (the capture relay's
 * waits read their receipts then).
 */
async function followRealtime(deps: HeadFollowerDeps, onNews: () => void): Promise<void> {
  // One pause for every read of the pending view: the poll, the watchdog and the head path's drop check.
  const preconfirmedBackoff = createPreconfirmedBackoff(deps.config.realtime.pendingPollIntervalMs);
  const follower = createHeadFollower({ ...deps, preconfirmedBackoff });
  const pending = createPreconfirmedIndexer({
    ...deps,
    preconfirmedBackoff,
    lastCanonicalBlock: follower.lastAppliedBlock,
    canonicalHashAt: follower.hashAt,
    onCanonicalHead: follower.onApplied,
    onStored: onNews,
  });
  follower.onApplied(onNews);
  const { realtime, rpc } = deps.config;
  const running: Array<Promise<void>> = [follower.run()];
  if (realtime.pendingPollIntervalMs > 0)
    running.push(pending.pollForever(), pending.watchForever());
  if (rpc.preconfWs !== undefined) pending.subscribe(rpc.preconfWs);
  await Promise.race(running);
}

/**
 * With realtime off: backfills to the final block, then again whenever it moves, until shutdown.
 */
async function followFinality(
  context: SyncDeps,
  health: ReturnType<typeof createHealth>,
): Promise<void> {
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
      onRetry: ({ error, delayMs }) =>
        recordHalt(context, error, "error", "Failed to keep up, retrying later", {
          retry_in_ms: delayMs,
        }),
      signal: shutdown.signal,
    });
    await sleep(FOLLOW_POLL_INTERVAL_MS, shutdown.signal);
  }
}

/**
 * Logs why syncing stopped (fatal when the daemon exits, error when it retries later) and counts it
 * in flashindex_sync_halts_total: an operator's alert must not depend on reading the last log line.
 */
function recordHalt(
  context: Common,
  error: unknown,
  level: "fatal" | "error",
  msg: string,
  extra: Record<string, unknown> = {},
): void {
  const reason = haltReason(error);
  context.metrics.syncHalts.inc({ reason });
  context.logger[level]({
    msg,
    reason,
    error: error instanceof BaseError ? error.shortMessage : String(error),
    ...extra,
  });
}

/**
 * A low-cardinality label for the metric: the first known cause along the chain (outermost first),
 * else the class.
 */
function haltReason(error: unknown): string {
  const known = walkCauses(error, (e) => knownCauseLabel(e) !== undefined);
  if (known !== undefined) return knownCauseLabel(known)!;
  if (error instanceof FatalError) return "fatal";
  if (error instanceof RetryableError) return "rpc_unavailable";
  return "unexpected";
}

/** The label of a cause an operator acts on by its name; undefined for any other. */
function knownCauseLabel(error: Error): string | undefined {
  if (error instanceof DamagedAnswerError) return "damaged_answer";
  if (error instanceof PrunedHistoryError) return "pruned_history";
  if (error instanceof WriterLockLostError || error instanceof WriterEpochLostError)
    return "writer_lost";
  return undefined;
}
