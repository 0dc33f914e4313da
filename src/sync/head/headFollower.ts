import type { SyncDeps } from "../syncDeps.js";
import PQueue from "p-queue";
import { getHeaders, type BlockHeader } from "../../chain/blockHeaders.js";
import { getChainTips } from "../../chain/finality.js";
import { RpcResponseError } from "../../errors/rpc.js";
import type { LogRow, LogStatus } from "../../rows/logRow.js";
import { RetryableError } from "../../errors/base.js";
import type { Health } from "../../ops/health.js";
import { createBlockTracker } from "./blockTracker.js";
import { branchTo } from "./branchTo.js";
import { createCatchUp } from "./catchUp.js";
import { followHeads } from "./followHeads.js";
import { getBlockRows } from "./getBlockRows.js";
import { reportReorg, tallyAppliedBlocks } from "./headMetrics.js";
import { createRemovedLogFlags } from "./removedLogFlags.js";
import { settleAfterRestart } from "./settleAfterRestart.js";
import { stillPreconfirmedAbove } from "../preconfirmed/stillPreconfirmed.js";
import type { PreconfirmedBackoff } from "../preconfirmed/preconfirmedBackoff.js";
import { createLateAttribution } from "../../attribution/attributeAfterCommit.js";
import { selectionFilters } from "../watchedLogs.js";
import { createWatchScope } from "../watchScope.js";

/** A new head further than this above the tracked head is caught up by the backfill engine, not block by block. */
export const MAX_HEAD_GAP_BLOCKS = 50;

export type HeadFollowerDeps = SyncDeps & {
  health: Health;
  /** The pause the pre-confirmed indexer keeps for the pre-confirmed view (a rate-limited endpoint): shared, so the head path does not ask it either. */
  preconfirmedBackoff?: PreconfirmedBackoff | undefined;
};

/**
 * Follows the confirmed chain for as long as the daemon runs: every new block's logs are indexed
 * (promoting their pre-confirmed twins), a parent-hash mismatch rolls back to the common ancestor
 * in one transaction, and blocks past the finality setting become finalized and are no longer tracked.
 * Returns a function that hands a head to the follower (used by subscriptions) and runs until shutdown.
 * Its parts: the catch-up (catchUp.ts), the walk back to a fork (branchTo.ts), applying one head in
 * one transaction (applyHead below), the node's removed flags (removedLogFlags.ts) and the sources
 * of heads (followHeads.ts).
 */
export function createHeadFollower(deps: HeadFollowerDeps) {
  const { config, metrics, shutdown, client, store, health } = deps;
  const logger = deps.logger.child({ component: "realtime" });
  const tracker = createBlockTracker();
  // Requests on the head path give way after realtime.requestTimeoutMs and move to the next endpoint.
  const headClient = client.withTimeout(config.realtime.requestTimeoutMs);
  // A block's confirmation never waits for its calldata: attribution follows the commit, and
  // its requests wait while the head's go first.
  const attributeLater = createLateAttribution({
    attributor: deps.attributor,
    client: headClient.background(),
    store,
    logger,
    shutdown,
  });
  const tokens = config.tokens;
  const blockDeps = { ...deps, client: headClient, chainId: config.chainId };
  // Blocks are applied strictly one head at a time, in arrival order.
  const serial = new PQueue({ concurrency: 1 });
  const removedFlags = createRemovedLogFlags({ store, metrics, logger });
  let finalized = -1;
  const appliedListeners: Array<() => void> = [];
  // Pre-confirmations are followed (poll or subscription): a log first seen in its sealed block was missed.
  const followsPreconfirmed =
    config.realtime.pendingPollIntervalMs > 0 || config.rpc.preconfWs !== undefined;

  const watchScope = createWatchScope({ tokens, store });
  // Synced-range members (a token, or a watched address of one) and what to fetch for them.
  const tokensAt = (block: number) => watchScope.membersAt(block);
  const selectionAt = (block: number) => watchScope.selection(tokensAt(block));
  const statusAt = (block: number): LogStatus => (block <= finalized ? "finalized" : "confirmed");

  const catchUpWithRetries = createCatchUp(deps, {
    logger,
    tracker,
    setFinalized: (block) => {
      finalized = block;
    },
    settle: (headers) =>
      settleAfterRestart(
        {
          ...blockDeps,
          store,
          tokens,
          watchScope,
          statusAt,
          windowBlocks: config.backfill.windowBlocks,
        },
        headers,
      ),
  });

  async function applyHead(head: BlockHeader): Promise<void> {
    if (tracker.hashAt(head.number) === head.hash) return;
    const tip = tracker.head();
    if (tip === undefined || head.number > tip.number + MAX_HEAD_GAP_BLOCKS)
      return catchUpWithRetries();
    // A late notification for a block that is already final is old news.
    if (head.number < (tracker.oldest()?.number ?? 0)) return;
    // Fill a short gap of missed heads, then check the link.
    const gap =
      head.number > tip.number + 1
        ? await getHeaders(headClient, tip.number + 1, head.number - 1)
        : [];
    const candidate = [...gap, head];
    for (let i = 1; i < candidate.length; i++) {
      if (candidate[i]!.parentHash !== candidate[i - 1]!.hash)
        throw new RpcResponseError(
          `the chain moved while fetching blocks ${tip.number + 1}..${head.number}`,
        );
    }
    const branch = [...(await branchTo(tracker, headClient, candidate[0]!)), ...candidate.slice(1)];
    const ancestor = branch[0]!.number - 1;
    // Behind by several blocks (a missed head, a hung request), their logs are fetched side by side:
    // a fault on one block's request no longer adds its wait to every block after it.
    const fetched = await Promise.all(
      branch.map(
        async (block) =>
          [
            block.hash,
            await getBlockRows(
              { ...blockDeps, tokens: await selectionAt(block.number) },
              block,
              statusAt(block.number),
            ),
          ] as const,
      ),
    );
    const rows = new Map<string, LogRow[]>(fetched);

    // Pre-confirmations about to be dropped are first looked up in the pre-confirmed view: a rebuilt pending block may hold them.
    const landed = new Set([...rows.values()].flat().map((r) => r.transactionHash));
    const unlanded = new Set(
      [...(await store.preconfirmedThrough(head.number))].filter((tx) => !landed.has(tx)),
    );
    const stillPreconfirmed = await stillPreconfirmedAbove(
      {
        ...blockDeps,
        client: headClient.refusingRateLimits(),
        logger,
        backoff: deps.preconfirmedBackoff,
      },
      await selectionAt(head.number),
      head.number,
      unlanded,
    );

    const now = Date.now();
    const orphaned = tracker.blocksAbove(ancestor);
    const { removed, blocks } = await store.applyChainChange(
      {
        kind: orphaned.length > 0 ? "reorg" : "head_block",
        orphaned,
        blocks: branch.map((block) => ({ number: block.number, rows: rows.get(block.hash)! })),
        stillPending: stillPreconfirmed,
        synced: branch.flatMap((block) =>
          tokensAt(block.number).map((token) => ({
            token,
            range: { from: block.number, to: block.number },
          })),
        ),
        // A shorter new branch: the orphaned heights above it leave the synced ranges, or a kill
        // before its next block would leave them claimed with only removed rows (a gap).
        endsAt: orphaned.some((block) => block.number > head.number) ? head.number : undefined,
      },
      now,
    );
    const applied = tallyAppliedBlocks(metrics, blocks);
    // Only after the commit does memory follow the database.
    tracker.rewindTo(ancestor);
    for (const block of branch) tracker.push(block);
    if (orphaned.length > 0) {
      reportReorg(
        { metrics, logger },
        {
          orphaned,
          ancestor,
          newHead: head.number,
          removed,
          flagged: removedFlags.takeFlagged(orphaned),
        },
      );
    }
    // A reorg's new branch re-inserts logs already seen in the orphaned blocks: not a missed pre-confirmation.
    if (followsPreconfirmed && orphaned.length === 0)
      metrics.preconfirmationsMissed.inc(applied.inserted);
    for (const listener of appliedListeners) listener();
    attributeLater([...landed], "confirmed");
    metrics.droppedPreconfirmed.inc(applied.dropped);
    if (applied.dropped > 0)
      logger.warn({
        msg: "Marked pre-confirmed logs dropped",
        block_number: head.number,
        dropped: applied.dropped,
      });
    metrics.chainHeadBlock.set(head.number);
    metrics.indexedBlock.set({ source: "head" }, head.number);
    metrics.lagBlocks.set(0);
    metrics.lagSeconds.set(Math.max(0, Date.now() / 1_000 - head.timestamp));
    health.markHeadSeen();
    logger.debug({
      msg: "Indexed block",
      block_number: head.number,
      block_hash: head.hash,
      inserted: applied.inserted,
      promoted: applied.promoted,
    });
    await advanceFinality();
  }

  async function advanceFinality(): Promise<void> {
    const tips = await getChainTips(headClient, config.finality);
    if (tips.finalized <= finalized) return;
    finalized = tips.finalized;
    const changed = await store.finalizeThrough(finalized, Date.now());
    tracker.forgetThrough(finalized);
    if (changed > 0)
      logger.debug({ msg: "Finalized logs", finalized_block: finalized, logs: changed });
  }

  /** Queues a head for processing; failures that are temporary are logged and the next head retries. */
  function submitHead(head: BlockHeader): Promise<void> {
    return serial.add(async () => {
      try {
        await applyHead(head);
      } catch (error) {
        if (!(error instanceof RetryableError)) throw error;
        logger.warn({
          msg: "Failed to apply head, retrying with the next one",
          block_number: head.number,
          error: error.shortMessage,
        });
      }
    });
  }

  /** Runs until shutdown: catch up, then apply heads from newHeads (WebSocket) or polling. */
  async function run(): Promise<void> {
    await catchUpWithRetries();
    await followHeads(deps, {
      logger,
      headClient,
      submitHead,
      queued: () => serial.size,
      logFilters: () =>
        selectionFilters({
          pending: true,
          ...watchScope.configuredSelection(watchScope.members()),
        }),
      onLogNotification: removedFlags.onNotification,
    });
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
