import type { Hex } from "viem";
import { getPendingHeader, type PendingHeader } from "../../chain/pendingHeader.js";
import type { RpcClient } from "../../chain/rpcClient.js";
import { RetryableError, ShutdownError } from "../../errors/base.js";
import type { Health } from "../../ops/health.js";
import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import { sleep, type Shutdown } from "../../ops/shutdown.js";
import type { PreconfirmedBackoff } from "./preconfirmedBackoff.js";

/** The pre-confirmed view may trail the head by this many blocks. Note: Base's own fix (base/base PR #4793) drops pending state more than 3 blocks behind. */
export const PRECONFIRMED_VIEW_MAX_LAG_BLOCKS = 3;
/** How long the view may stay too far behind, or null, before its data is no longer stored: a late flashblock or two is normal. */
export const PRECONFIRMED_VIEW_DISTRUST_AFTER_MS = 3_000;
/** How often the watchdog reads the pending block. */
export const PRECONFIRMED_VIEW_CHECK_INTERVAL_MS = 1_000;
/** Pending blocks whose parent hash is remembered (the view spans a few blocks at most). */
const PARENTS_REMEMBERED = 16;

export type PreconfirmedViewWatchDeps = {
  client: RpcClient;
  logger: Logger;
  metrics: Metrics;
  health: Health;
  shutdown: Shutdown;
  /** The last canonical block applied. */
  head: () => number;
  backoff: PreconfirmedBackoff;
};

/**
 * The pre-confirmed view's watchdog. A Base node's pre-confirmed view can go stale (base/node#1129: 450 blocks
 * behind until a restart; base/base#1439: 3-5 behind) or null (#187, #178; a node stuck at "waiting
 * for first Flashblock" after a restart, #826) while `latest` is healthy. Past PRECONFIRMED_VIEW_MAX_LAG_BLOCKS,
 * or null while new blocks come, for longer than PRECONFIRMED_VIEW_DISTRUST_AFTER_MS, pre-confirmed data is not trusted (the
 * pending indexer stores none), /healthz says so; the view is trusted again as soon as it is current.
 * It also remembers each pending block's parent hash, so rows are only stored against the right parent.
 */
export function createPreconfirmedViewWatch(deps: PreconfirmedViewWatchDeps) {
  const { metrics, health } = deps;
  const logger = deps.logger.child({ component: "pending_view" });
  const parents = new Map<number, Hex>();
  /** The newest pending block number ever seen: while the view is null, the lag counts from it. */
  let lastSeen: number | undefined;
  /** The head when the watch first read the view: the reference while no pending block was ever seen. */
  let headAtStart: number | undefined;
  /** The head when the view was first seen null (undefined while it is not). */
  let headWhenNull: number | undefined;
  /** Since when (ms) the view has been behind or null; undefined while it is current. */
  let badSince: number | undefined;
  let trusted = true;
  let checking: Promise<void> | undefined;
  metrics.preconfirmedViewTrusted.set(1);

  function judge(header: PendingHeader | undefined, now: number): void {
    const head = deps.head();
    headAtStart ??= head;
    if (header !== undefined) {
      parents.set(header.number, header.parentHash);
      for (const number of parents.keys())
        if (parents.size > PARENTS_REMEMBERED && number < header.number) parents.delete(number);
      lastSeen = Math.max(lastSeen ?? header.number, header.number);
    }
    const reference = header?.number ?? lastSeen ?? headAtStart + 1;
    const lag = Math.max(0, head + 1 - reference);
    metrics.preconfirmedViewLag.set(lag);
    // A null view is only wrong while the chain moves: between blocks, or on a chain that stands
    // still, a node has nothing pending to show.
    headWhenNull = header === undefined ? (headWhenNull ?? head) : undefined;
    const bad =
      header === undefined ? head > headWhenNull! : lag > PRECONFIRMED_VIEW_MAX_LAG_BLOCKS;
    if (!bad) {
      badSince = undefined;
      if (!trusted)
        logger.info({
          msg: "Trusted the pending view again",
          pending_block: header?.number,
          head_block: head,
        });
      setTrusted(true, undefined);
      return;
    }
    badSince ??= now;
    const problem =
      header === undefined
        ? "the node's pending view is null"
        : `the node's pending view is ${lag} blocks behind the head`;
    if (now - badSince < PRECONFIRMED_VIEW_DISTRUST_AFTER_MS) return;
    if (trusted)
      logger.warn({
        msg: "Stopped trusting the pending view",
        reason: problem,
        pending_block: header?.number ?? null,
        head_block: head,
        lag_blocks: lag,
      });
    setTrusted(false, `${problem} (for ${Math.round((now - badSince) / 1_000)} s)`);
  }

  function setTrusted(value: boolean, problem: string | undefined): void {
    trusted = value;
    metrics.preconfirmedViewTrusted.set(value ? 1 : 0);
    health.markPreconfirmedView(problem);
  }

  async function checkOnce(): Promise<void> {
    if (deps.backoff.waitMs() > 0) return;
    let header: PendingHeader | undefined;
    try {
      header = await getPendingHeader(deps.client);
    } catch (error) {
      if (!(error instanceof RetryableError)) throw error;
      const delay = deps.backoff.failed(error);
      logger.warn({
        msg: "Failed to read the pending block",
        error: error.shortMessage,
        retry_in_ms: delay,
      });
      return;
    }
    deps.backoff.succeeded();
    judge(header, Date.now());
  }

  /** Reads the pending block now (concurrent calls share one read); a failed read changes nothing. */
  function check(): Promise<void> {
    checking ??= checkOnce().finally(() => (checking = undefined));
    return checking;
  }

  return {
    check,
    /** Whether pre-confirmed data may be stored now. */
    trusted: () => trusted,
    /** The parent hash of pending block `number` as the node last showed it, if known. */
    parentOf: (number: number): Hex | undefined => parents.get(number),
    /** Checks every PRECONFIRMED_VIEW_CHECK_INTERVAL_MS until shutdown. */
    async runForever(): Promise<void> {
      for (;;) {
        await sleep(PRECONFIRMED_VIEW_CHECK_INTERVAL_MS, deps.shutdown.signal);
        try {
          await check();
        } catch (error) {
          if (error instanceof ShutdownError) throw error;
          logger.error({
            msg: "Stopped watching the pending view",
            error: (error as Error).message,
          });
          return;
        }
      }
    },
  };
}

export type PreconfirmedViewWatch = ReturnType<typeof createPreconfirmedViewWatch>;
