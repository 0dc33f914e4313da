import type { SyncDeps } from "../syncDeps.js";
import type { Hex } from "viem";
import { createWsSubscription } from "../../chain/wsSubscription.js";
import type { Health } from "../../ops/health.js";
import { createPreconfirmedBackoff, type PreconfirmedBackoff } from "./preconfirmedBackoff.js";
import { createHeldRows, parentVerdict } from "./heldRows.js";
import { createPreconfirmedViewWatch } from "./preconfirmedViewWatch.js";
import { HashesOnlyError } from "../../errors/rpc.js";
import { logsOfNotification, flashblocksSubscriptions } from "./flashblocksNotifications.js";
import type { LogRow, LogSource } from "../../rows/logRow.js";
import { fetchLogRows, rowsOfNotification } from "../fetchLogRows.js";
import { matchesFilter, topicsOf } from "../../chain/getLogs.js";
import { selectionFilters } from "../watchedLogs.js";
import { createWatchScope } from "../watchScope.js";
import { RetryableError, ShutdownError } from "../../errors/base.js";
import { sleep } from "../../ops/shutdown.js";
import { createLateAttribution } from "../../attribution/attributeAfterCommit.js";
import { createStreamPositions } from "../../decode/preconfirmedTwins.js";
import { countIndexed } from "../../store/insertCounts.js";

export type PreconfirmedIndexerDeps = SyncDeps & {
  health: Health;
  /** The last canonical block applied: pre-confirmations at or below it are stale. */
  lastCanonicalBlock: () => number;
  /** The hash of canonical block `number` while it is tracked (not yet final). */
  canonicalHashAt: (number: number) => Hex | undefined;
  /** Calls `listener` after every canonical head is applied. */
  onCanonicalHead: (listener: () => void) => void;
  /** The pause for reads of the pre-confirmed view, shared with the head follower; default: one of its own. */
  preconfirmedBackoff?: PreconfirmedBackoff | undefined;
  /** Observer called after each commit with the rows it stored (benchmarks, tests). */
  onStored?: ((rows: readonly LogRow[]) => void) | undefined;
};

/**
 * Indexes pre-confirmed logs from two sources into one set of rows: the pre-confirmed view polled about
 * every 200 ms, and a Flashblocks subscription (`pendingLogs`, or `newFlashblockTransactions` where the
 * node offers only that). Both are de-duplicated by the store's key; neither alone is a complete
 * record (a node's subscription loses notifications when its client lags), the canonical blocks
 * settle what really landed. Nothing is stored while the pre-confirmed view's watchdog distrusts the view,
 * nor against a parent that is not the canonical block (such rows wait for their parent).
 */
export function createPreconfirmedIndexer(deps: PreconfirmedIndexerDeps) {
  const { config, metrics, shutdown, store } = deps;
  // The pre-confirmed view is polled every ~200 ms: a hung request gives way after realtime.requestTimeoutMs.
  // Pre-confirmations can wait for the confirmed head: every request here is background work.
  const client = deps.client.withTimeout(config.realtime.requestTimeoutMs).background();
  // Reads of the pre-confirmed view pace themselves (the backoff below): a rate limit is theirs to wait out.
  const preconfirmedReads = client.refusingRateLimits();
  const logger = deps.logger.child({ component: "pending" });
  const watchScope = createWatchScope({ tokens: config.tokens, store });
  const members = watchScope.members();
  const positions = createStreamPositions();
  // The poll and the watchdog read the same (possibly rate-limited) endpoint: one pause for both.
  const backoff =
    deps.preconfirmedBackoff ?? createPreconfirmedBackoff(config.realtime.pendingPollIntervalMs);
  // Only a polled pre-confirmed view is watched: without the poll, rpc.http need not be a Flashblocks node at all.
  const watched = config.realtime.pendingPollIntervalMs > 0;
  const watch = createPreconfirmedViewWatch({
    client: preconfirmedReads,
    logger,
    metrics,
    health: deps.health,
    shutdown,
    head: deps.lastCanonicalBlock,
    backoff,
  });
  const reportStoreFailure = (logs: number) => (error: unknown) =>
    logger.error({
      msg: "Failed to store pre-confirmed logs",
      error: (error as Error).message,
      logs,
    });
  const held = createHeldRows();
  deps.onCanonicalHead(() => {
    for (const batch of held.take())
      storeRows(batch.rows, batch.source, batch.receivedAt, batch.wrongParent).catch(
        reportStoreFailure(batch.rows.length),
      );
  });

  // Attribution of pre-confirmed logs runs after their commit, so it never adds to their latency.
  const attributeLater = createLateAttribution({
    attributor: deps.attributor,
    client,
    store,
    logger,
    shutdown,
  });

  // Commits run one after another, in arrival order, whatever the backend's latency.
  let lastCommit: Promise<unknown> = Promise.resolve();
  function storeRows(
    rows: LogRow[],
    source: LogSource,
    receivedAt: readonly number[],
    wrongParent = false,
  ): Promise<number> {
    const commit = lastCommit.then(() => commitRows(rows, source, receivedAt, wrongParent));
    lastCommit = commit.catch(() => undefined);
    return commit;
  }

  /** The rows whose pending block sits on the canonical parent; the others are held for later. */
  async function anchored(
    rows: LogRow[],
    source: LogSource,
    receivedAt: readonly number[],
  ): Promise<LogRow[]> {
    if (!watched) return rows;
    const blocks = [...new Set(rows.map((r) => r.blockNumber))];
    // A slow pending read does not hold rows back for long: past the wait, an unknown parent is not judged.
    if (blocks.some((b) => watch.parentOf(b) === undefined))
      await Promise.race([watch.check().catch(() => undefined), delay(PARENT_LOOKUP_WAIT_MS)]);
    const head = deps.lastCanonicalBlock();
    const waiting = new Set(
      blocks.filter(
        (b) => parentVerdict(b, watch.parentOf(b), head, deps.canonicalHashAt) === "hold",
      ),
    );
    if (waiting.size === 0) return rows;
    const wait = rows.filter((r) => waiting.has(r.blockNumber));
    const wrongParent = [...waiting].some((b) => b - 1 <= head);
    held.hold({ rows: wait, source, receivedAt, wrongParent });
    logger.debug({
      msg: "Held pre-confirmed logs until their parent block",
      blocks: [...waiting],
      logs: wait.length,
      head_block: head,
      wrong_parent: wrongParent,
    });
    return rows.filter((r) => !waiting.has(r.blockNumber));
  }

  /** Commits pre-confirmed rows in one transaction and records the ingest latency. */
  async function commitRows(
    rows: LogRow[],
    source: LogSource,
    receivedAt: readonly number[],
    wrongParent = false,
  ): Promise<number> {
    const current = rows.filter((row) => row.blockNumber > deps.lastCanonicalBlock());
    // Rows held against a parent the chain did not take, whose block is canonical now: never stored.
    if (wrongParent && current.length < rows.length)
      metrics.preconfirmationsRefused.inc({ reason: "wrong_parent" }, rows.length - current.length);
    if (current.length === 0) return 0;
    if (!watch.trusted()) {
      metrics.preconfirmationsRefused.inc({ reason: "untrusted_view" }, current.length);
      return 0;
    }
    const fresh = await anchored(current, source, receivedAt);
    if (fresh.length === 0) return 0;
    const counts = await store.insertPreconfirmed(fresh, Date.now());
    const inserted = counts.inserted;
    countIndexed(metrics, counts.byEvent);
    if (counts.moved > 0) {
      metrics.movedPreconfirmed.inc({ from: "preconfirmed" }, counts.moved - counts.revived);
      metrics.movedPreconfirmed.inc({ from: "dropped" }, counts.revived);
      logger.info({
        msg: "Moved pre-confirmed logs to a later block",
        moved: counts.moved,
        revived: counts.revived,
        block_number: Math.max(...fresh.map((r) => r.blockNumber)),
      });
    }
    const committedAt = performance.now();
    for (const at of receivedAt)
      metrics.preconfirmationLatency.observe({ source }, (committedAt - at) / 1_000);
    if (inserted > 0) {
      metrics.preconfirmedLogs.inc({ source }, inserted);
      metrics.indexedBlock.set({ source: "pending" }, Math.max(...fresh.map((r) => r.blockNumber)));
    }
    deps.onStored?.(fresh);
    if (inserted > 0)
      attributeLater(
        fresh.map((r) => r.transactionHash),
        "pre-confirmed",
      );
    return inserted;
  }

  // A flashblock arrives as a burst of notifications: rows that arrive in the same turn of the event
  // loop are committed in one transaction, so the last of a burst does not wait for one commit per log.
  let streamed: LogRow[] = [];
  let streamedAt: number[] = [];
  let flushScheduled = false;
  function flushStreamed(): void {
    flushScheduled = false;
    const rows = streamed;
    const receivedAt = streamedAt;
    streamed = [];
    streamedAt = [];
    storeRows(rows, "pending_ws", receivedAt).catch(reportStoreFailure(rows.length));
  }

  const rowsDeps = { client: preconfirmedReads, logger, metrics, chainId: config.chainId };
  const preconfirmed = { statusOf: () => "preconfirmed" as const };

  /** Reads the whole pre-confirmed view once (also after each pendingLogs reconnect, to fill what was missed). */
  async function pollOnce(): Promise<number> {
    const receivedAt = performance.now();
    // Lenient: a bad pre-confirmed log is dropped and counted; its canonical block settles it later.
    const selection = { pending: true as const, ...(await watchScope.selection(members)) };
    const rows = await fetchLogRows(rowsDeps, selection, {
      ...preconfirmed,
      source: "pending",
      timestampOf: nowSeconds,
      strict: false,
    });
    return storeRows(rows, "pending", [receivedAt]);
  }

  async function pollForever(): Promise<void> {
    for (;;) {
      await sleep(
        Math.max(config.realtime.pendingPollIntervalMs, backoff.waitMs()),
        shutdown.signal,
      );
      if (backoff.waitMs() > 0) continue;
      try {
        await pollOnce();
        backoff.succeeded();
      } catch (error) {
        if (error instanceof ShutdownError) throw error;
        if (!(error instanceof RetryableError)) {
          logger.error({
            msg: "Stopped polling the pending view",
            error: (error as Error).message,
          });
          return;
        }
        // A rate-limited or failing endpoint is asked less often; the subscription goes on meanwhile.
        const delay = backoff.failed(error);
        logger.warn({
          msg: "Failed to poll the pending view",
          error: error.shortMessage,
          retry_in_ms: delay,
        });
      }
    }
  }

  // One subscription per filter: a watched token's filters cannot be one (topic positions AND; watchedLogs.ts).
  const streams = selectionFilters({
    pending: true,
    ...watchScope.configuredSelection(members),
  }).map((filter) => ({
    filter,
    choices: flashblocksSubscriptions({ address: filter.addresses, topics: topicsOf(filter) }),
    subscription: undefined as ReturnType<typeof createWsSubscription> | undefined,
  }));

  /**
   * One notification of the chosen subscription: pendingLogs (a log, or an array of all logs so far on
   * v0.3.0/v0.4.0) or newFlashblockTransactions (a transaction with its logs, or an array of them).
   * `which` is the subscription's filter (one per filter of a watched token).
   */
  function onNotification(result: unknown, receivedAt: number, choice = 0, which = 0): void {
    const { filter, choices } = streams[which]!;
    const stream = choices[choice]?.stream ?? "pendingLogs";
    try {
      const { logs, whole } = logsOfNotification(stream, result, (log) =>
        matchesFilter(log, filter),
      );
      const rows = rowsOfNotification(rowsDeps, filter, logs, {
        ...preconfirmed,
        source: "pending_ws",
        timestampOf: nowSeconds,
      });
      // Note: a one-log notification does not show the transaction's other logs; number them as they stream in.
      if (!whole) for (const row of rows) row.txLogPosition = positions.place(row);
      if (rows.length === 0) return;
      streamed.push(...rows);
      streamedAt.push(receivedAt);
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flushStreamed);
      }
    } catch (error) {
      metrics.wsMessagesRejected.inc({ subscription: stream });
      logger.warn({ msg: `Rejected ${stream} notification`, error: (error as Error).message });
      // Note: a node that does not know the filter form of newFlashblockTransactions sends hashes only.
      if (error instanceof HashesOnlyError) streams[which]!.subscription?.next();
    }
  }

  function subscribe(url: string): void {
    streams.forEach((entry, which) => {
      entry.subscription = createWsSubscription(deps, {
        url,
        name: "pendingLogs",
        params: entry.choices[0]!.params,
        alternatives: entry.choices.slice(1).map((c) => c.params),
        initialDelayMs: config.realtime.reconnectInitialDelayMs,
        maxDelayMs: config.realtime.reconnectMaxDelayMs,
        onNotification: (result, receivedAt, choice) =>
          onNotification(result, receivedAt, choice, which),
        onSubscribed: (reconnect) => {
          if (!reconnect || config.realtime.pendingPollIntervalMs === 0) return;
          pollOnce().catch((error: unknown) =>
            logger.warn({
              msg: "Failed to refill the pending view after reconnect",
              error: (error as Error).message,
            }),
          );
        },
      });
    });
  }

  return {
    pollOnce,
    pollForever,
    subscribe,
    onNotification,
    /** Runs the pre-confirmed view's watchdog until shutdown (only when the pre-confirmed view is polled). */
    watchForever: async () => (watched ? watch.runForever() : undefined),
    view: watch,
  };
}

/** Longest a pre-confirmed row waits for its pending block's parent hash to be read. */
const PARENT_LOOKUP_WAIT_MS = 250;

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

function nowSeconds(): number {
  return Math.floor(Date.now() / 1_000);
}
