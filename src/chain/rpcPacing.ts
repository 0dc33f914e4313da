import type { Config } from "../config/types.js";
import type { RateLimitedError } from "../errors/rpc.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import { retryAfterOf } from "../ops/withRetry.js";
import { createRateLimiter, type RequestPriority } from "./rateLimiter.js";

/**
 * Most requests in flight at once: more than the backfill's windows plus the live path ever ask
 * for. The limit starts at one and grows by one every round trip up to this (the rate limiter's
 * slow start); head requests may add rateLimiter.ts's HEAD_RESERVED_REQUESTS.
 */
const MAX_REQUESTS_IN_FLIGHT = 32;

/**
 * One attempt's request as the rate limiter sees it: its cost (calls), class, and when it left
 * (performance.now() ms).
 */
export type Sending = { cost: number; priority: RequestPriority; sentAt: number | undefined };

/**
 * The provider's rate refusals so far, for a request another thread sends (OutgoingRequest):
 * `refusals` is shared with that thread, `refusalsSeen` its count when the limiter let the request
 * go.
 */
export type SharedRefusals = { refusals: Int32Array; refusalsSeen: number };

export type RpcPacing = {
  /**
   * Passes the limiter (one token per call of the request) and notes when the request left, in
   * `sending`. `leavesLater`: another thread sends it and says when (`leftAt`).
   */
  paced: <T>(sending: Sending, task: () => Promise<T>, leavesLater?: boolean) => Promise<T>;
  /**
   * Another thread sent the request at `at` (performance.now() ms of this thread), later than it
   * was let go.
   */
  leftAt: (sending: Sending, at: number) => void;
  /** The refusal count to hand a request another thread sends; read when the limiter lets it go. */
  sharedRefusals: () => SharedRefusals;
  /** The request was answered. */
  answered: (sending: Sending) => void;
  /**
   * A provider refused the request for its rate (its `ofRequest`-th refusal): the limiter weighs
   * it; a cut is logged.
   */
  refused: (sending: Sending, error: RateLimitedError, ofRequest: number) => void;
  /** The rate now, in calls per second (Infinity while nothing paces). */
  requestsPerSecond: () => number;
  /** Whether the rate was cut for a provider's rate limit since the client started. */
  rateLimited: () => boolean;
};

/**
 * The client's glue to its rate limiter (rateLimiter.ts: two priority classes, paced just under the
 * limit a provider showed), across threads: a request the decode thread sends is paced from when it
 * left, and after a cut or a named wait one let go but not yet sent there stays unsent
 * (HeldBackError).
 */
export function createRpcPacing(deps: {
  config: Pick<Config, "rpc">;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
}): RpcPacing {
  const { config, logger, metrics } = deps;
  const limiter = createRateLimiter({
    requestsPerSecond: config.rpc.requestsPerSecond ?? Number.POSITIVE_INFINITY,
    concurrency: MAX_REQUESTS_IN_FLIGHT,
    signal: deps.shutdown.signal,
  });
  /**
   * The provider's rate refusals so far, shared with the threads that send requests
   * (OutgoingRequest).
   */
  const refusals = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));

  return {
    paced: (sending, task, leavesLater = false) =>
      limiter.run(
        sending.cost,
        (sentAt) => {
          sending.sentAt = sentAt;
          return task();
        },
        sending.priority,
        leavesLater,
      ),

    // The other thread may send it later than it was let go (busy decoding): the pacing counts it
    // from when it left, and the paced requests after it wait for that.
    leftAt: (sending, at) => {
      if (sending.sentAt === undefined) return;
      limiter.left(sending.sentAt, at, sending.cost);
      if (at > sending.sentAt) sending.sentAt = at;
    },

    sharedRefusals: () => ({ refusals, refusalsSeen: Atomics.load(refusals, 0) }),

    answered: (sending) => limiter.answered(sending.cost, sending.sentAt ?? performance.now()),

    refused: (sending, error, ofRequest) => {
      const retryAfterMs = retryAfterOf(error);
      // A request refused before it left (it never did) still tells the limiter the provider's
      // mind.
      const cut = limiter.refused(sending.sentAt ?? performance.now(), retryAfterMs, sending.cost);
      // After a cut or a named wait, requests let go but not yet sent by another thread stay unsent
      // (HeldBackError).
      if (cut || retryAfterMs !== undefined) Atomics.add(refusals, 0, 1);
      if (!cut) return;
      const state = limiter.state();
      metrics.rpcRateLimitCuts.inc();
      logger.warn({
        msg: "Slowed RPC requests after a rate limit",
        requests_per_second: Math.round(state.requestsPerSecond * 100) / 100,
        provider_limit: Math.round(state.ceiling * 100) / 100,
        refusals_of_request: ofRequest,
        ...(retryAfterMs === undefined ? {} : { retry_after_ms: retryAfterMs }),
      });
    },

    requestsPerSecond: () => limiter.state().requestsPerSecond,
    rateLimited: () => limiter.state().refusedBefore,
  };
}
