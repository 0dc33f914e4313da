import { getHeaders, type BlockHeader } from "../../chain/blockHeaders.js";
import { getChainTips } from "../../chain/finality.js";
import { RetryableError } from "../../errors/base.js";
import { RpcResponseError } from "../../errors/rpc.js";
import type { Health } from "../../ops/health.js";
import type { Logger } from "../../ops/logger.js";
import { exponentialBackoff, withRetry } from "../../ops/withRetry.js";
import { backfill } from "../historical/backfill.js";
import type { SyncDeps } from "../syncDeps.js";
import type { BlockTracker } from "./blockTracker.js";

/** Catch-up attempts before a temporary failure stops the daemon (exit 75). */
const CATCH_UP_ATTEMPTS = 4;
/** Backoff between catch-up attempts (full jitter): a reorg that raced the catch-up is over within a block or two. */
const CATCH_UP_RETRY_INITIAL_DELAY_MS = 1_000;
const CATCH_UP_RETRY_MAX_DELAY_MS = 8_000;

export type CatchUpParts = {
  logger: Logger;
  tracker: BlockTracker;
  /** Told the finalized block before the backfill starts (rows at or below it are stored final). */
  setFinalized: (block: number) => void;
  /** Settles the rows stored before a restart against the unfinalized `headers` (settleAfterRestart.ts). */
  settle: (headers: readonly BlockHeader[]) => Promise<void>;
};

/**
 * The head follower's catch-up: backfills to the head, loads the unfinalized headers into the
 * tracker, and settles rows stored before a restart. It races a live chain (a reorg while headers
 * load): a temporary failure is tried again a few times (CATCH_UP_ATTEMPTS) before it stops the daemon.
 */
export function createCatchUp(
  deps: SyncDeps & { health: Health },
  parts: CatchUpParts,
): () => Promise<void> {
  const { config, metrics, shutdown, client, health } = deps;
  const { logger, tracker } = parts;

  async function catchUp(): Promise<void> {
    const tips = await getChainTips(client, config.finality);
    const finalized = tips.finalized;
    parts.setFinalized(finalized);
    // Pre-confirmations keep arriving meanwhile: the reader indexes are built without holding them back.
    await backfill(deps, { to: tips.head, finalized }, { mode: "daemon" });
    const headers = await getHeaders(
      client,
      Math.max(0, Math.min(finalized + 1, tips.head)),
      tips.head,
    );
    for (let i = 1; i < headers.length; i++) {
      if (headers[i]!.parentHash !== headers[i - 1]!.hash)
        throw new RpcResponseError(
          `the chain moved while loading headers at block ${headers[i]!.number}`,
        );
    }
    await parts.settle(headers);
    tracker.reset(headers);
    metrics.chainHeadBlock.set(tips.head);
    metrics.indexedBlock.set({ source: "head" }, tips.head);
    metrics.lagBlocks.set(0);
    health.markHeadSeen();
    health.markBackfillCaughtUp(true);
    logger.info({
      msg: "Caught up with the head",
      head_block: tips.head,
      finalized_block: finalized,
      tracked_blocks: tracker.size(),
    });
  }

  return () =>
    withRetry(catchUp, {
      retryCount: CATCH_UP_ATTEMPTS - 1,
      shouldRetry: ({ error }) => error instanceof RetryableError,
      delay: exponentialBackoff({
        initialDelayMs: CATCH_UP_RETRY_INITIAL_DELAY_MS,
        maxDelayMs: CATCH_UP_RETRY_MAX_DELAY_MS,
      }),
      onRetry: ({ count, error }) =>
        logger.warn({
          msg: "Failed to catch up, retrying",
          attempt: count + 1,
          max_attempts: CATCH_UP_ATTEMPTS,
          error: (error as RetryableError).shortMessage,
        }),
      signal: shutdown.signal,
    });
}
