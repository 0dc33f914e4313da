import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { SyncDeps } from "../syncDeps.js";
import { missingRanges, planSegments } from "../../blockRanges.js";
import { syncHistorical, type WindowResult } from "./syncHistorical.js";
import { getBlockHeader } from "../../chain/blockHeaders.js";
import {
  WRITER_THREAD_MIN_BLOCKS,
  WRITER_THREAD_MIN_LOGS,
  WRITER_THREAD_MIN_WINDOW_LOGS,
  type ProcessMode,
} from "../../ops/threadSettings.js";
import type { WindowWriter } from "../../store/store.js";
import { countIndexed } from "../../store/insertCounts.js";
import { NUMBER_AT, NUMBER_FIELDS } from "../../rows/packedRows.js";
import {
  createWatchScope,
  memberRanges,
  membersOf,
  recordWatchLists,
  tokenCheckpoint,
} from "../watchScope.js";

/** How often the backfill reports progress at info level. */
export const PROGRESS_INTERVAL_MS = 5_000;
/**
 * A backfill that has stored this many logs, and at least BULK_SHARE_OF_STORED of what the table
 * held before it, defers the reader indexes to its end (a bulk load); a short catch-up on a large
 * table never does (rebuilding its indexes would cost more than it saves). A backfill into an empty
 * store defers them from its start.
 */
export const BULK_MIN_LOGS = 50_000;
export const BULK_SHARE_OF_STORED = 0.25;
/** Windows handed to the writer thread and not yet committed: one committing, one queued behind it. */
export const COMMITS_IN_FLIGHT = 2;

export type BackfillDeps = SyncDeps;

export type BackfillRange = {
  /** Last block to index (inclusive). */
  to: number;
  /** First block to index; defaults to each token's start block. */
  from?: number | undefined;
  /** Blocks at or below this are stored as finalized, above it as confirmed. */
  finalized: number;
  /** The chain head when the backfill started (flashindex_chain_head_block); defaults to `to`. */
  head?: number | undefined;
  /**
   * Called after every committed window (a terminal's progress bar); when given, it replaces the
   * periodic "Backfill progressed" log line.
   */
  onProgress?: ((progress: BackfillProgress) => void) | undefined;
};

/** Where a running backfill stands; rates are since its start. */
export type BackfillProgress = {
  blocksDone: number;
  blocksTotal: number;
  logs: number;
  logsPerSecond: number;
  etaSeconds: number;
  /** Size of the last committed window, in blocks. */
  windowBlocks: number;
};

export type BackfillSummary = { windows: number; logs: number; blocks: number; durationMs: number };

/**
 * Indexes every block in range that is not yet indexed, for every configured token. Each window's
 * synced range is committed in the same transaction as its last rows (store/windowCommit.ts): a
 * crash leaves neither a gap nor a duplicate, and a restart fetches only what is missing.
 */
export async function backfill(
  sync: BackfillDeps,
  range: BackfillRange,
  options: {
    bulkMinLogs?: number;
    writerThread?: boolean;
    writerThreadMinLogs?: number;
    writerThreadMinWindowLogs?: number;
    decodeThreadAfterLogs?: number;
    /** What runs beside this backfill (ops/threadSettings.ts): `daemon` when live work does; `batch` (the default) otherwise. */
    mode?: ProcessMode;
    /**
     * A bulk load stages its attribution and moves it into place at its end (schemaV10.ts): about
     * twice as fast with random hashes, but none of it is visible until then. For `flashindex
     * backfill`, a batch its user waits for; the daemon, whose catch-up on a provider may take
     * hours and whose readers query meanwhile, writes attribution as it comes.
     */
    stageAttribution?: boolean;
  } = {},
): Promise<BackfillSummary> {
  // History can wait: its requests borrow what the head path leaves (chain/rateLimiter.ts).
  const deps: BackfillDeps = { ...sync, client: sync.client.background() };
  const bulkMinLogs = options.bulkMinLogs ?? BULK_MIN_LOGS;
  const mode = options.mode ?? "batch";
  const { config, metrics, store, attributor } = deps;
  const logger = deps.logger.child({ component: "backfill" });
  const tokens = config.tokens;

  const watchScope = createWatchScope({ tokens, store });
  await recordWatchLists({ store, logger }, tokens);
  // A watched address added to the list has no range of its own yet: its history is fetched, and only its (watchScope.ts).
  const needs = await Promise.all(
    tokens.flatMap((token) =>
      membersOf(token).map(async (member) => ({
        member,
        ranges: missingRanges(
          await memberRanges(store, member),
          Math.max(token.startBlock, range.from ?? 0),
          range.to,
        ),
      })),
    ),
  );
  const segments = planSegments(needs);
  const totalBlocks = segments.reduce((sum, s) => sum + (s.to - s.from + 1), 0);
  const started = Date.now();
  const summary: BackfillSummary = { windows: 0, logs: 0, blocks: 0, durationMs: 0 };
  metrics.backfillTargetBlock.set(range.to);
  // The head is known before the first window: the gauge must not read 0 while catching up.
  metrics.chainHeadBlock.set(range.head ?? range.to);
  if (segments.length === 0) {
    logger.debug({ msg: "Found nothing to backfill", to_block: range.to });
    await finishBulkLoad();
    return summary;
  }
  const storedBefore = await store.storedLogCount();
  let bulk = false;
  logger.info({
    msg: "Started backfill",
    from_block: segments[0]!.from,
    to_block: range.to,
    blocks: totalBlocks,
    tokens: tokens.length,
  });
  /** Drops the reader indexes (and Postgres's per-row-checked keys) until the end: see BULK_MIN_LOGS. */
  async function startBulkLoad(): Promise<void> {
    bulk = true;
    await store.readerIndexes.drop();
    logger.info({
      msg: "Deferred reader indexes to the end of the backfill",
      logs: summary.logs,
      stored_before: storedBefore,
    });
  }
  // Into an empty store a bulk load always pays: building an index once, sorted, never costs more
  // than maintaining it row by row, and there is nothing stored for readers to miss meanwhile.
  if (storedBefore === 0) await startBulkLoad();

  /**
   * Finishes what a bulk load (this one, or one killed before its end) left: moves its staged
   * attribution into place, then builds the reader indexes it dropped (the one by code indexes
   * what was just moved).
   */
  async function finishBulkLoad(): Promise<void> {
    if (await store.stagedAttribution.pending()) {
      const started = performance.now();
      const transactions = await store.stagedAttribution.move({ mode });
      logger.info({
        msg: "Moved staged attribution into place",
        transactions,
        duration_ms: Math.round(performance.now() - started),
      });
    }
    deps.shutdown.throwIfKilled();
    if ((await store.readerIndexes.missing()).length === 0) return;
    const started = performance.now();
    // A stop asked for meanwhile lets the index under way finish and leaves the rest to the next start.
    const built = await store.readerIndexes.build({ mode, signal: deps.shutdown.signal });
    metrics.dbWriteDuration.observe({ kind: "index_build" }, (performance.now() - started) / 1_000);
    logger.info({
      msg: "Built reader indexes",
      indexes: built,
      duration_ms: Math.round(performance.now() - started),
    });
    deps.shutdown.throwIfKilled();
  }
  let lagBlockAsked = -1;
  /** The block time (Unix seconds) of the newest row committed so far. */
  let newestRowTime = 0;
  const updateCheckpoint = async () => {
    const ends = await Promise.all(tokens.map((t) => tokenCheckpoint(store, t)));
    const checkpoint = Math.min(...ends);
    metrics.backfillCheckpointBlock.set(checkpoint);
    metrics.indexedBlock.set({ source: "backfill" }, checkpoint);
    metrics.lagBlocks.set(Math.max(0, (range.head ?? range.to) - checkpoint));
    // flashindex_sync_lag_seconds: now minus the newest indexed block's time, one header per progress
    // tick. Against a rate-limited provider every call is a window's worth of logs: the newest row's
    // block time stands in (older by the blocks without logs at the end of its window).
    if (deps.client.rateLimited()) {
      if (newestRowTime > 0)
        metrics.lagSeconds.set(Math.max(0, Date.now() / 1_000 - newestRowTime));
    } else if (checkpoint >= 0 && checkpoint !== lagBlockAsked) {
      lagBlockAsked = checkpoint;
      getBlockHeader(deps.client, checkpoint).then(
        (header) =>
          header !== undefined &&
          metrics.lagSeconds.set(Math.max(0, Date.now() / 1_000 - header.timestamp)),
        () => undefined,
      );
    }
  };

  let lastProgress = Date.now();
  const windows = syncHistorical(deps, {
    segments,
    finalized: range.finalized,
    attributor,
    decodeThreadAfterLogs: options.decodeThreadAfterLogs,
    mode,
    selection: watchScope.selection,
  });
  /** Sends a window to the writer thread; once it is committed, counts it and reports progress. */
  async function commitWindow(writer: WindowWriter, window: WindowResult): Promise<void> {
    // Committing a window here (a short backfill), or posting one to the writer thread, holds this thread: live messages received meanwhile go first.
    await yieldToEventLoop();
    // Read before the commit: the rows' buffers move to the writer thread.
    if (window.rows.count > 0)
      newestRowTime = Math.max(
        newestRowTime,
        window.rows.numbers[(window.rows.count - 1) * NUMBER_FIELDS + NUMBER_AT.blockTimestamp]!,
      );
    const writeStarted = performance.now();
    const counts = await writer.commit(
      { ...window, stageAttribution: bulk && options.stageAttribution === true },
      Date.now(),
    );
    metrics.dbWriteDuration.observe(
      { kind: "backfill_window" },
      (performance.now() - writeStarted) / 1_000,
    );
    countIndexed(metrics, counts.byEvent);
    summary.windows++;
    summary.logs += counts.inserted;
    summary.blocks += window.to - window.from + 1;
    if (!bulk && summary.logs >= Math.max(bulkMinLogs, storedBefore * BULK_SHARE_OF_STORED))
      await startBulkLoad();
    const seconds = Math.max((Date.now() - started) / 1_000, 1e-3);
    const rate = summary.blocks / seconds;
    const progress: BackfillProgress = {
      blocksDone: summary.blocks,
      blocksTotal: totalBlocks,
      logs: summary.logs,
      logsPerSecond: Math.round(summary.logs / seconds),
      etaSeconds: Math.round((totalBlocks - summary.blocks) / Math.max(rate, 1e-9)),
      windowBlocks: window.to - window.from + 1,
    };
    range.onProgress?.(progress);
    // First window, then every PROGRESS_INTERVAL_MS, and the last: a short run reports progress too.
    const last = summary.blocks >= totalBlocks;
    if (summary.windows === 1 || last || Date.now() - lastProgress >= PROGRESS_INTERVAL_MS) {
      lastProgress = Date.now();
      await updateCheckpoint();
      if (range.onProgress === undefined)
        logger.info({
          msg: "Backfill progressed",
          blocks_done: progress.blocksDone,
          blocks_total: progress.blocksTotal,
          blocks_per_second: Math.round(rate),
          logs: progress.logs,
          logs_per_second: progress.logsPerSecond,
          window_blocks: progress.windowBlocks,
          eta_seconds: progress.etaSeconds,
        });
    }
  }

  // A long run tells the store so (SQLite then writes on a thread of its own while the next windows are fetched and decoded).
  let onThread = options.writerThread ?? totalBlocks >= WRITER_THREAD_MIN_BLOCKS;
  let writer = store.openWindowWriter({ bulk: onThread, mode });
  let fetchedLogs = 0;
  const committing: Array<Promise<void>> = [];
  try {
    for await (const window of windows) {
      fetchedLogs += window.rows.count;
      const dense =
        fetchedLogs >= (options.writerThreadMinLogs ?? WRITER_THREAD_MIN_LOGS) ||
        window.rows.count >= (options.writerThreadMinWindowLogs ?? WRITER_THREAD_MIN_WINDOW_LOGS);
      if (!onThread && options.writerThread === undefined && dense) {
        // Dense blocks: the rest goes to the writer thread, after the windows already sent (commits stay in order).
        await Promise.all(committing.splice(0));
        await writer.close();
        onThread = true;
        writer = store.openWindowWriter({ bulk: true, mode });
      }
      committing.push(commitWindow(writer, window));
      if (committing.length >= COMMITS_IN_FLIGHT) await committing.shift();
    }
    await Promise.all(committing);
  } finally {
    await Promise.allSettled(committing);
    await writer.close();
  }
  await updateCheckpoint();
  await finishBulkLoad();
  summary.durationMs = Date.now() - started;
  logger.info({
    msg: "Finished backfill",
    to_block: range.to,
    windows: summary.windows,
    logs: summary.logs,
    duration_ms: summary.durationMs,
  });
  return summary;
}
