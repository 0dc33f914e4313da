import PQueue from "p-queue";
import type { Hex } from "viem";
import { splitRange, type BlockRange, type Segment } from "../../blockRanges.js";
import { splitAfterRangeError } from "../../chain/rangeErrors.js";
import type { RpcClient } from "../../chain/rpcClient.js";
import { RangeLimitError } from "../../errors/rpc.js";
import type { Config } from "../../config/types.js";
import { PAYMENT_TOPICS } from "../../rows/paymentEvents.js";
import { FatalError } from "../../errors/base.js";
import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { Shutdown } from "../../ops/shutdown.js";
import {
  createWindowSize,
  RATE_LIMITED_TARGET_LOGS_PER_WINDOW,
  TARGET_LOGS_PER_WINDOW,
} from "./windowSize.js";
import { fetchWindowRows } from "../fetchLogRows.js";
import type { PackedRows } from "../../rows/packedRows.js";
import { createWindowDecoder } from "./windowDecoder.js";
import type { Attributor } from "../../attribution/attributeLogs.js";
import type { PackedAttribution } from "../../rows/packedAttribution.js";
import { emptyAttribution } from "../../rows/packedAttribution.js";
import type { ProcessMode } from "../../ops/threadSettings.js";
import type { MemberSelection } from "../watchScope.js";

/** One fetched window: the rows to store and the members (sync/watchScope.ts: tokens, or watched addresses of one) whose range it completes. */
export type Window = BlockRange & { tokens: readonly Hex[] };
/**
 * A fetched window: its rows and the packed attribution of their transactions, or (a rate-limited
 * provider) the blocks whose attribution it leaves owed.
 */
export type WindowResult = Window & {
  rows: PackedRows;
  attribution: PackedAttribution;
  owed?: Array<[number, Hex]> | undefined;
};

export type HistoricalDeps = {
  config: Pick<Config, "chainId" | "backfill">;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
  client: RpcClient;
};

/**
 * Fetches the segments window by window, `backfill.concurrency` at a time, and yields each finished
 * window (in completion order) for the caller to commit. At most `concurrency` windows are in flight
 * or waiting to be consumed, so memory stays flat however long the range.
 */
export async function* syncHistorical(
  deps: HistoricalDeps,
  plan: {
    segments: readonly Segment<Hex>[];
    /** Blocks at or below this are stored as finalized, above it as confirmed. */
    finalized: number;
    attributor?: Attributor | undefined;
    /** Logs decoded on this thread before the decode thread starts (windowDecoder.ts). */
    decodeThreadAfterLogs?: number | undefined;
    /** `daemon`: live work runs in this process, and the decode thread yields the CPU to it (ops/threadSettings.ts). */
    mode?: ProcessMode | undefined;
    /** What to fetch for a window's members (watchScope.ts); default: every payment event of the members as token addresses. */
    selection?: ((members: readonly Hex[]) => Promise<MemberSelection>) | undefined;
  },
): AsyncGenerator<WindowResult> {
  const { config, metrics, shutdown, client } = deps;
  const logger = deps.logger.child({ component: "historical" });
  const concurrency = config.backfill.concurrency;
  // Against a rate-limited provider, fewer and larger answers: requests are what is scarce then.
  const windowSize = createWindowSize(config.backfill.windowBlocks, () =>
    client.rateLimited() ? RATE_LIMITED_TARGET_LOGS_PER_WINDOW : TARGET_LOGS_PER_WINDOW,
  );
  metrics.backfillWindowBlocks.set(windowSize.current());

  const retries: Window[] = [];
  const segments = plan.segments.map((s) => ({ ...s }));
  /** Next window: split pieces first (they are older work), then the current segment at the current size. */
  function nextWindow(): Window | undefined {
    const retry = retries.shift();
    if (retry !== undefined) return retry;
    const segment = segments[0];
    if (segment === undefined) return undefined;
    const [window] = splitRange(segment, windowSize.current());
    segment.from = window!.to + 1;
    if (segment.from > segment.to) segments.shift();
    return { ...window!, tokens: segment.members };
  }

  async function fetchWindow(window: Window): Promise<WindowResult> {
    const started = performance.now();
    // Strict: a window is stored only from an answer in which every log passed validation.
    const fetched = await fetchWindowRows(
      { client, logger, metrics, chainId: config.chainId },
      decoder,
      {
        from: window.from,
        to: window.to,
        ...(plan.selection === undefined
          ? { addresses: window.tokens, topic0: PAYMENT_TOPICS }
          : await plan.selection(window.tokens)),
      },
      plan.finalized,
    );
    logger.debug({
      msg: "Fetched window",
      from_block: window.from,
      to_block: window.to,
      tokens: window.tokens.length,
      logs: fetched.rows.count,
      duration_ms: Math.round(performance.now() - started),
    });
    if (plan.attributor === undefined)
      return { ...window, rows: fetched.rows, attribution: emptyAttribution() };
    // Against a rate-limited provider the calldata (a call per block: on Base hundreds of times the
    // logs' calls) trails the logs: the window owes its blocks, and attribution/trailingAttribution.ts
    // pays them once the logs are stored.
    if (client.rateLimited())
      return {
        ...window,
        rows: fetched.rows,
        attribution: emptyAttribution(),
        owed: fetched.blocks,
      };
    // The window's calldata: at most one call per block (attributeWindow).
    const attribution = await plan.attributor.attributeWindow(deps.client, decoder, fetched);
    return { ...window, rows: fetched.rows, attribution };
  }

  const decoder = createWindowDecoder({
    threadAfterLogs: plan.decodeThreadAfterLogs,
    mode: plan.mode,
  });
  const queue = new PQueue({ concurrency });
  const finished: WindowResult[] = [];
  // Boxed, so that even a thrown `undefined` stops the run.
  let failure: { error: unknown } | undefined;
  // Our own count: p-queue still counts a task as pending while its last lines run, after it woke us.
  let inFlight = 0;
  let wake = (): void => undefined;

  async function run(window: Window): Promise<void> {
    try {
      const result = await fetchWindow(window);
      finished.push(result);
      windowSize.recordSuccess(window.to - window.from + 1, result.rows.count);
    } catch (error) {
      if (!(error instanceof RangeLimitError)) {
        failure ??= { error };
        return;
      }
      const pieces = splitAfterRangeError(BigInt(window.from), BigInt(window.to), error.hint);
      if (pieces === undefined) {
        failure ??= {
          error: new FatalError(
            `Block ${window.from} alone holds more logs than the provider returns in one answer`,
            { details: error.shortMessage, cause: error },
          ),
        };
        return;
      }
      const first = pieces[0]!;
      // A limit the provider stated in blocks is a ceiling for the rest of the run, not a guess to
      // retry; one stated in results is the most any window should aim for.
      windowSize.shrinkTo(Number(first.to - first.from) + 1, error.hint.kind === "maxRange");
      if (error.hint.kind === "maxResults") windowSize.capResults(error.hint.results);
      logger.info({
        msg: "Split window after a provider range limit",
        from_block: window.from,
        to_block: window.to,
        window_blocks: windowSize.current(),
        error: error.shortMessage,
      });
      retries.unshift(
        ...pieces.map((p) => ({ from: Number(p.from), to: Number(p.to), tokens: window.tokens })),
      );
    } finally {
      metrics.backfillWindowBlocks.set(windowSize.current());
      inFlight--;
      wake();
    }
  }

  try {
    for (;;) {
      while (
        failure === undefined &&
        !shutdown.isKilled() &&
        inFlight + finished.length < concurrency
      ) {
        const window = nextWindow();
        if (window === undefined) break;
        inFlight++;
        void queue.add(() => run(window));
      }
      const result = finished.shift();
      if (result !== undefined) {
        yield result;
        continue;
      }
      if (inFlight === 0) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    if (failure !== undefined) throw failure.error;
    shutdown.throwIfKilled();
  } finally {
    queue.clear();
    // Windows still in flight (a failure or a shutdown ended the run) are abandoned with their thread.
    await decoder.close();
  }
}
