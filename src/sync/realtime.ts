import type { SyncDeps } from "./syncDeps.js";
import PQueue from "p-queue";
import { getBlockHeader, getHeaders, parseBlockHeader, type BlockHeader } from "../chain/blockHeaders.js";
import { getChainTips } from "../chain/finality.js";
import { RpcResponseError } from "../errors/rpc.js";
import { parseRpcLog } from "../chain/rpcLog.js";
import { createWsSubscription } from "../chain/wsSubscription.js";
import type { LogRow, LogStatus } from "../decode/logRow.js";
import { FatalError, RetryableError } from "../errors/base.js";
import type { Health } from "../ops/health.js";
import { sleep } from "../ops/shutdown.js";
import { exponentialBackoff, withRetry } from "../ops/withRetry.js";
import { backfill } from "./backfill.js";
import { createBlockTracker } from "./blockTracker.js";
import { getBlockRows } from "./canonicalBlocks.js";
import { settleAfterRestart } from "./settleAfterRestart.js";
import { stillPendingAbove } from "./stillPending.js";
import type { PendingBackoff } from "./pendingBackoff.js";
import { createLateAttribution } from "../attribution/attributeAfterCommit.js";
import { countIndexed } from "../store/insertCounts.js";
import { topicsOf } from "../chain/getLogs.js";
import { selectionFilters } from "./watchedLogs.js";
import { createWatchScope } from "./watchScope.js";

/** A new head further than this above the tracked head is caught up by the backfill engine, not block by block. */
export const MAX_HEAD_GAP_BLOCKS = 50;
/** Catch-up attempts before a temporary failure stops the daemon (exit 75). */
const CATCH_UP_ATTEMPTS = 4;
/** Backoff between catch-up attempts (full jitter): a reorg that raced the catch-up is over within a block or two. */
const CATCH_UP_RETRY_INITIAL_DELAY_MS = 1_000;
const CATCH_UP_RETRY_MAX_DELAY_MS = 8_000;
/** Blocks whose logs the node flagged removed, remembered (count per block hash) until their reorg is detected. */
const FLAGGED_BLOCKS_REMEMBERED = 256;

export type RealtimeDeps = SyncDeps & {
  health: Health;
  /** The pause the pending indexer keeps for the pending view (a rate-limited endpoint): shared, so the head path does not ask it either. */
  pendingBackoff?: PendingBackoff | undefined;
};

/**
 * Follows the confirmed chain for as long as the daemon runs: every new block's logs are indexed
 * (promoting their pre-confirmed twins), a parent-hash mismatch rolls back to the common ancestor
 * in one transaction, and blocks past the finality setting become finalized and are no longer tracked.
 * Returns a function that hands a head to the follower (used by subscriptions) and runs until shutdown.
 */
export function createHeadFollower(deps: RealtimeDeps) {
  const { config, metrics, shutdown, client, store, health } = deps;
  const logger = deps.logger.child({ component: "realtime" });
  const tracker = createBlockTracker();
  // Requests on the head path give way after realtime.requestTimeoutMs and move to the next endpoint.
  const headClient = client.withTimeout(config.realtime.requestTimeoutMs);
  // A block's confirmation never waits for its calldata: attribution follows the commit, and
  // its requests wait while the head's go first.
  const attributeLater = createLateAttribution({ attributor: deps.attributor, client: headClient.background(), store, logger, shutdown });
  const tokens = config.tokens;
  const blockDeps = { ...deps, client: headClient, chainId: config.chainId };
  // Blocks are applied strictly one head at a time, in arrival order.
  const serial = new PQueue({ concurrency: 1 });
  // Logs the `logs` subscription flagged removed before the parent-hash walk found their reorg:
  // "Detected reorg" counts them too, so its removed_logs says what the reorg removed.
  const flaggedByNode = new Map<string, number>();
  let finalized = -1;
  const appliedListeners: Array<() => void> = [];
  // Pre-confirmations are followed (poll or subscription): a log first seen in its sealed block was missed.
  const followsPreconfirmations = config.realtime.pendingPollIntervalMs > 0 || config.rpc.preconfWs !== undefined;

  const watchScope = createWatchScope({ tokens, store });
  // Synced-range members (a token, or a watched address of one) and what to fetch for them.
  const tokensAt = (block: number) => watchScope.membersAt(block);
  const selectionAt = (block: number) => watchScope.selection(tokensAt(block));
  const statusAt = (block: number): LogStatus => (block <= finalized ? "finalized" : "confirmed");

  /** Backfills to the head, loads the unfinalized headers, and settles rows stored before a restart. */
  async function catchUp(): Promise<void> {
    const tips = await getChainTips(client, config.finality);
    finalized = tips.finalized;
    // Pre-confirmations keep arriving meanwhile: the reader indexes are built without holding them back.
    await backfill(deps, { to: tips.head, finalized }, { mode: "daemon" });
    const headers = await getHeaders(client, Math.max(0, Math.min(finalized + 1, tips.head)), tips.head);
    for (let i = 1; i < headers.length; i++) {
      if (headers[i]!.parentHash !== headers[i - 1]!.hash) throw new RpcResponseError(`the chain moved while loading headers at block ${headers[i]!.number}`);
    }
    await settleAfterRestart({ ...blockDeps, store, tokens, watchScope, statusAt, windowBlocks: config.backfill.windowBlocks }, headers);
    tracker.reset(headers);
    metrics.chainHeadBlock.set(tips.head);
    metrics.indexedBlock.set({ source: "head" }, tips.head);
    metrics.lagBlocks.set(0);
    health.markHeadSeen();
    health.markBackfillCaughtUp(true);
    logger.info({ msg: "Caught up with the head", head_block: tips.head, finalized_block: finalized, tracked_blocks: tracker.size() });
  }

  /** Catch-up races a live chain (a reorg while headers load): a temporary failure is tried again a few times. */
  function catchUpWithRetries(): Promise<void> {
    return withRetry(catchUp, {
      retryCount: CATCH_UP_ATTEMPTS - 1,
      shouldRetry: ({ error }) => error instanceof RetryableError,
      delay: exponentialBackoff({ initialDelayMs: CATCH_UP_RETRY_INITIAL_DELAY_MS, maxDelayMs: CATCH_UP_RETRY_MAX_DELAY_MS }),
      onRetry: ({ count, error }) =>
        logger.warn({ msg: "Failed to catch up, retrying", attempt: count + 1, max_attempts: CATCH_UP_ATTEMPTS, error: (error as RetryableError).shortMessage }),
      signal: shutdown.signal,
    });
  }

  /** Walks back from `head` to a block whose parent the tracker holds; throws when deeper than tracked. */
  async function branchTo(head: BlockHeader): Promise<BlockHeader[]> {
    const branch = [head];
    for (;;) {
      const first = branch[0]!;
      const known = tracker.hashAt(first.number - 1);
      if (known === first.parentHash) return branch;
      const oldest = tracker.oldest();
      if (oldest === undefined || first.number - 1 < oldest.number)
        throw new FatalError(
          `Reorg deeper than the ${tracker.size()} tracked blocks at block ${first.number}: refusing to diverge from the chain`,
          { details: `the canonical parent ${first.parentHash} of block ${first.number} is not among the tracked unfinalized blocks; check the finality setting` },
        );
      const parent = await getBlockHeader(headClient, first.number - 1);
      if (parent === undefined || parent.hash !== first.parentHash)
        throw new RpcResponseError(`the chain moved while walking back from block ${head.number}`);
      branch.unshift(parent);
    }
  }

  async function applyHead(head: BlockHeader): Promise<void> {
    if (tracker.hashAt(head.number) === head.hash) return;
    const tip = tracker.head();
    if (tip === undefined || head.number > tip.number + MAX_HEAD_GAP_BLOCKS) return catchUpWithRetries();
    // A late notification for a block that is already final is old news.
    if (head.number < (tracker.oldest()?.number ?? 0)) return;
    // Fill a short gap of missed heads, then check the link.
    const gap = head.number > tip.number + 1 ? await getHeaders(headClient, tip.number + 1, head.number - 1) : [];
    const candidate = [...gap, head];
    for (let i = 1; i < candidate.length; i++) {
      if (candidate[i]!.parentHash !== candidate[i - 1]!.hash) throw new RpcResponseError(`the chain moved while fetching blocks ${tip.number + 1}..${head.number}`);
    }
    const branch = [...(await branchTo(candidate[0]!)), ...candidate.slice(1)];
    const ancestor = branch[0]!.number - 1;
    // Behind by several blocks (a missed head, a hung request), their logs are fetched side by side:
    // a fault on one block's request no longer adds its wait to every block after it.
    const fetched = await Promise.all(
      branch.map(async (block) => [block.hash, await getBlockRows({ ...blockDeps, tokens: await selectionAt(block.number) }, block, statusAt(block.number))] as const),
    );
    const rows = new Map<string, LogRow[]>(fetched);

    // Pre-confirmations about to be dropped are first looked up in the pending view: a rebuilt pending block may hold them.
    const landed = new Set([...rows.values()].flat().map((r) => r.transactionHash));
    const unlanded = new Set([...(await store.preconfirmedThrough(head.number))].filter((tx) => !landed.has(tx)));
    const stillPending = await stillPendingAbove(
      { ...blockDeps, client: headClient.refusingRateLimits(), logger, backoff: deps.pendingBackoff },
      await selectionAt(head.number),
      head.number,
      unlanded,
    );

    const now = Date.now();
    const orphaned = tracker.blocksAbove(ancestor);
    const applied = { promoted: 0, inserted: 0, dropped: 0 };
    const { removed, blocks } = await store.applyChainChange(
      {
        kind: orphaned.length > 0 ? "reorg" : "head_block",
        orphaned,
        blocks: branch.map((block) => ({ number: block.number, rows: rows.get(block.hash)! })),
        stillPending,
        synced: branch.flatMap((block) => tokensAt(block.number).map((token) => ({ token, range: { from: block.number, to: block.number } }))),
        // A shorter new branch: the orphaned heights above it leave the synced ranges, or a kill
        // before its next block would leave them claimed with only removed rows (a gap).
        endsAt: orphaned.some((block) => block.number > head.number) ? head.number : undefined,
      },
      now,
    );
    for (const result of blocks) {
      applied.promoted += result.promoted;
      applied.inserted += result.inserted;
      applied.dropped += result.dropped;
      for (const ms of result.leadTimesMs) metrics.preconfirmationLeadTime.observe(ms / 1_000);
      countIndexed(metrics, result.byEvent);
    }
    // Only after the commit does memory follow the database.
    tracker.rewindTo(ancestor);
    for (const block of branch) tracker.push(block);
    if (orphaned.length > 0) {
      metrics.reorgs.inc();
      metrics.reorgDepth.observe(orphaned.length);
      metrics.removedLogs.inc({ via: "parent_hash" }, removed);
      let flagged = 0;
      for (const block of orphaned) {
        flagged += flaggedByNode.get(block.hash.toLowerCase()) ?? 0;
        flaggedByNode.delete(block.hash.toLowerCase());
      }
      logger.warn({
        msg: "Detected reorg",
        depth: orphaned.length,
        common_ancestor: ancestor,
        new_head: head.number,
        removed_logs: removed + flagged,
        removed_by_node_flag: flagged,
      });
    }
    // A reorg's new branch re-inserts logs already seen in the orphaned blocks: not a missed pre-confirmation.
    if (followsPreconfirmations && orphaned.length === 0) metrics.preconfirmationsMissed.inc(applied.inserted);
    for (const listener of appliedListeners) listener();
    attributeLater([...landed], "confirmed");
    metrics.droppedPreconfirmed.inc(applied.dropped);
    if (applied.dropped > 0) logger.warn({ msg: "Marked pre-confirmed logs dropped", block_number: head.number, dropped: applied.dropped });
    metrics.chainHeadBlock.set(head.number);
    metrics.indexedBlock.set({ source: "head" }, head.number);
    metrics.lagBlocks.set(0);
    metrics.lagSeconds.set(Math.max(0, Date.now() / 1_000 - head.timestamp));
    health.markHeadSeen();
    logger.debug({ msg: "Indexed block", block_number: head.number, block_hash: head.hash, inserted: applied.inserted, promoted: applied.promoted });
    await advanceFinality();
  }

  async function advanceFinality(): Promise<void> {
    const tips = await getChainTips(headClient, config.finality);
    if (tips.finalized <= finalized) return;
    finalized = tips.finalized;
    const changed = await store.finalizeThrough(finalized, Date.now());
    tracker.forgetThrough(finalized);
    if (changed > 0) logger.debug({ msg: "Finalized logs", finalized_block: finalized, logs: changed });
  }

  /** Queues a head for processing; failures that are temporary are logged and the next head retries. */
  function submitHead(head: BlockHeader): Promise<void> {
    return serial.add(async () => {
      try {
        await applyHead(head);
      } catch (error) {
        if (!(error instanceof RetryableError)) throw error;
        logger.warn({ msg: "Failed to apply head, retrying with the next one", block_number: head.number, error: error.shortMessage });
      }
    });
  }

  /** Honours `removed: true` from a `logs` subscription: a real node re-sends reorged-out logs so. */
  function onLogNotification(result: unknown): void {
    const items = Array.isArray(result) ? result : [result];
    for (const item of items) {
      let log;
      try {
        log = parseRpcLog(item, "logs notification");
      } catch (error) {
        metrics.wsMessagesRejected.inc({ subscription: "logs" });
        logger.warn({ msg: "Rejected logs notification", error: (error as Error).message });
        continue;
      }
      if (!log.removed) continue;
      const { blockHash, logIndex } = log;
      store.removeLog(log, Date.now()).then(
        (changed) => {
          metrics.removedLogs.inc({ via: "removed_flag" }, changed);
          if (changed === 0) return;
          logger.warn({ msg: "Flagged log removed by the node", block_hash: blockHash, log_index: logIndex });
          // Counted into the "Detected reorg" line when the parent-hash walk reaches this block.
          const key = blockHash.toLowerCase();
          flaggedByNode.set(key, (flaggedByNode.get(key) ?? 0) + changed);
          if (flaggedByNode.size > FLAGGED_BLOCKS_REMEMBERED) flaggedByNode.delete(flaggedByNode.keys().next().value!);
        },
        (error: unknown) => logger.error({ msg: "Failed to flag a log removed by the node", block_hash: blockHash, log_index: logIndex, error: (error as Error).message }),
      );
    }
  }

  /** Runs until shutdown: catch up, then apply heads from newHeads (WebSocket) or polling. */
  async function run(): Promise<void> {
    await catchUpWithRetries();
    let lastWsHeadAt = 0;
    // Boxed, so that even a rejection with `undefined` stops the loop.
    let failure: { error: unknown } | undefined;
    const fail = (error: unknown) => {
      failure ??= { error };
    };
    if (config.rpc.ws !== undefined) {
      const ws = { url: config.rpc.ws, initialDelayMs: config.realtime.reconnectInitialDelayMs, maxDelayMs: config.realtime.reconnectMaxDelayMs };
      createWsSubscription(deps, {
        ...ws,
        name: "newHeads",
        params: ["newHeads"],
        onNotification: (result) => {
          lastWsHeadAt = Date.now();
          try {
            submitHead(parseBlockHeader(result, "newHeads notification")).catch(fail);
          } catch (error) {
            metrics.wsMessagesRejected.inc({ subscription: "newHeads" });
            logger.warn({ msg: "Rejected newHeads notification", error: (error as Error).message });
          }
        },
      });
      // A watched token takes one subscription per filter (topic positions AND, so "from or to" is two); the list is fixed at start-up.
      for (const filter of selectionFilters({ pending: true, ...watchScope.configuredSelection(watchScope.members()) }))
        createWsSubscription(deps, { ...ws, name: "logs", params: ["logs", { address: filter.addresses, topics: topicsOf(filter) }], onNotification: onLogNotification });
    }
    // Polling runs always but only acts when the WebSocket has been quiet: it is the fallback.
    while (failure === undefined) {
      await sleep(config.realtime.headPollIntervalMs, shutdown.signal);
      if (Date.now() - lastWsHeadAt < 3 * config.realtime.headPollIntervalMs + 2_000) continue;
      try {
        const head = await getBlockHeader(headClient, "latest");
        if (head !== undefined && serial.size === 0) await submitHead(head);
      } catch (error) {
        if (!(error instanceof RetryableError)) throw error;
        logger.warn({ msg: "Failed to poll the head", error: error.shortMessage });
      }
    }
    throw failure.error;
  }

  return {
    run,
    submitHead,
    lastAppliedBlock: () => tracker.head()?.number ?? -1,
    /** The hash of block `number` while it is tracked (unfinalized). */
    hashAt: (number: number) => tracker.hashAt(number),
    /** Calls `listener` after each applied head (its commit done, memory updated). */
    onApplied: (listener: () => void) => void appliedListeners.push(listener),
  };
}

export type HeadFollower = ReturnType<typeof createHeadFollower>;
