import type { SyncDeps } from "./syncDeps.js";
import type { Hex } from "viem";
import { parseRpcLog } from "../chain/rpcLog.js";
import { createWsSubscription } from "../chain/wsSubscription.js";
import type { LogRow, LogSource } from "../decode/logRow.js";
import { fetchLogRows, rowsOfNotification } from "./fetchLogRows.js";
import { PAYMENT_TOPICS } from "../decode/paymentEvents.js";
import { RetryableError, ShutdownError } from "../errors/base.js";
import { sleep } from "../ops/shutdown.js";
import { countIndexed } from "../store/sqlite/logWriter.js";
import { createLateAttribution } from "../attribution/attributeAfterCommit.js";
import { createStreamPositions } from "../decode/preconfirmedTwins.js";

export type PendingDeps = SyncDeps & {
  /** The last canonical block applied: pre-confirmations at or below it are stale. */
  lastCanonicalBlock: () => number;
  /** Observer called after each commit with the rows it stored (benchmarks, tests). */
  onStored?: ((rows: readonly LogRow[]) => void) | undefined;
};


/**
 * Indexes pre-confirmed logs from two sources into one set of rows: the pending view polled about
 * every 200 ms, and the Flashblocks `pendingLogs` subscription. Both are de-duplicated by the store's
 * key; neither alone is a complete record, the canonical blocks settle what really landed.
 */
export function createPendingIndexer(deps: PendingDeps) {
  const { config, metrics, shutdown, store } = deps;
  // The pending view is polled every ~200 ms: a hung request gives way after realtime.requestTimeoutMs.
  const client = deps.client.withTimeout(config.realtime.requestTimeoutMs);
  const logger = deps.logger.child({ component: "pending" });
  const addresses = config.tokens.map((t) => t.key as Hex);
  const pendingFilter = { pending: true, addresses, topic0: PAYMENT_TOPICS } as const;
  const positions = createStreamPositions();

  // Attribution of pre-confirmed logs runs after their commit, so it never adds to their latency.
  const attributeLater = createLateAttribution({ attributor: deps.attributor, client, store, logger, shutdown });

  // Commits run one after another, in arrival order, whatever the backend's latency.
  let lastCommit: Promise<unknown> = Promise.resolve();
  function storeRows(rows: LogRow[], source: LogSource, receivedAt: readonly number[]): Promise<number> {
    const commit = lastCommit.then(() => commitRows(rows, source, receivedAt));
    lastCommit = commit.catch(() => undefined);
    return commit;
  }

  /** Commits pre-confirmed rows in one transaction and records the ingest latency. */
  async function commitRows(rows: LogRow[], source: LogSource, receivedAt: readonly number[]): Promise<number> {
    const fresh = rows.filter((row) => row.blockNumber > deps.lastCanonicalBlock());
    if (fresh.length === 0) return 0;
    const counts = await store.insertPreconfirmed(fresh, Date.now());
    const inserted = counts.inserted;
    countIndexed(metrics, counts.byEvent);
    if (counts.moved > 0) {
      metrics.movedPreconfirmed.inc({ from: "preconfirmed" }, counts.moved - counts.revived);
      metrics.movedPreconfirmed.inc({ from: "dropped" }, counts.revived);
      logger.info({ msg: "Moved pre-confirmed logs to a later block", moved: counts.moved, revived: counts.revived, block_number: Math.max(...fresh.map((r) => r.blockNumber)) });
    }
    const committedAt = performance.now();
    for (const at of receivedAt) metrics.preconfirmationLatency.observe({ source }, (committedAt - at) / 1_000);
    if (inserted > 0) {
      metrics.preconfirmedLogs.inc({ source }, inserted);
      metrics.indexedBlock.set({ source: "pending" }, Math.max(...fresh.map((r) => r.blockNumber)));
    }
    deps.onStored?.(fresh);
    if (inserted > 0) attributeLater(fresh.map((r) => r.transactionHash), "pre-confirmed");
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
    storeRows(rows, "pending_ws", receivedAt).catch((error: unknown) =>
      logger.error({ msg: "Failed to store pre-confirmed logs", error: (error as Error).message, logs: rows.length }),
    );
  }

  const rowsDeps = { client, logger, metrics, chainId: config.chainId };
  const preconfirmed = { statusOf: () => "preconfirmed" as const };

  /** Reads the whole pending view once (also after each pendingLogs reconnect, to fill what was missed). */
  async function pollOnce(): Promise<number> {
    const receivedAt = performance.now();
    // Lenient: a bad pre-confirmed log is dropped and counted; its canonical block settles it later.
    const rows = await fetchLogRows(rowsDeps, pendingFilter, { ...preconfirmed, source: "pending", timestampOf: nowSeconds, strict: false });
    return storeRows(rows, "pending", [receivedAt]);
  }

  async function pollForever(): Promise<void> {
    for (;;) {
      await sleep(config.realtime.pendingPollIntervalMs, shutdown.signal);
      try {
        await pollOnce();
      } catch (error) {
        if (error instanceof ShutdownError) throw error;
        if (!(error instanceof RetryableError)) {
          logger.error({ msg: "Stopped polling the pending view", error: (error as Error).message });
          return;
        }
        logger.warn({ msg: "Failed to poll the pending view", error: error.shortMessage });
      }
    }
  }

  /** One `pendingLogs` notification: a single log (current nodes) or an array of all logs so far (v0.3.0/v0.4.0). */
  function onNotification(result: unknown, receivedAt: number): void {
    try {
      const array = Array.isArray(result);
      const logs = (array ? result : [result]).map((item, i) => parseRpcLog(item, `pendingLogs result[${i}]`));
      const rows = rowsOfNotification(rowsDeps, pendingFilter, logs, { ...preconfirmed, source: "pending_ws", timestampOf: nowSeconds });
      // Note: a one-log notification does not show the transaction's other logs; number them as they stream in.
      if (!array) for (const row of rows) row.txLogPosition = positions.place(row);
      streamed.push(...rows);
      streamedAt.push(receivedAt);
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flushStreamed);
      }
    } catch (error) {
      metrics.wsMessagesRejected.inc({ subscription: "pendingLogs" });
      logger.warn({ msg: "Rejected pendingLogs notification", error: (error as Error).message });
    }
  }

  function subscribe(url: string): void {
    createWsSubscription(deps, {
      url,
      name: "pendingLogs",
      params: ["pendingLogs", { address: addresses, topics: [[...PAYMENT_TOPICS]] }],
      initialDelayMs: config.realtime.reconnectInitialDelayMs,
      maxDelayMs: config.realtime.reconnectMaxDelayMs,
      onNotification,
      onSubscribed: (reconnect) => {
        if (!reconnect || config.realtime.pendingPollIntervalMs === 0) return;
        pollOnce().catch((error: unknown) => logger.warn({ msg: "Failed to refill the pending view after reconnect", error: (error as Error).message }));
      },
    });
  }

  return { pollOnce, pollForever, subscribe, onNotification };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1_000);
}
