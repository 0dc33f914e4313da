import type { Config } from "../config/types.js";
import { RetryableError } from "../errors/base.js";
import { BatchOverRateError, HeldBackError, RateLimitedError } from "../errors/rpc.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import { backoffDelayMs, withRetry } from "../ops/withRetry.js";
import type { BatchPolicy } from "./batchPolicy.js";
import { classifyRpcError, outcomeOf } from "./classifyRpcError.js";
import { hedgedCall } from "./hedgedCall.js";
import type { RequestPriority } from "./rateLimiter.js";
import type { RpcEndpoint, RpcEndpoints } from "./rpcEndpoints.js";
import type { RpcPacing, Sending } from "./rpcPacing.js";

/**
 * A head request with a short timeout (withTimeout) unanswered after this share of it is sent
 * again: two hung requests in a row no longer cost two whole timeouts (issue 41: 8 blocks behind).
 */
export const HEDGE_SHARE = 0.4;
/**
 * Backoff (full jitter) before a request refused for the rate is asked again, unless the provider
 * named a wait.
 */
const REFUSED_RETRY_BACKOFF = { initialDelayMs: 100, maxDelayMs: 5_000 };

/**
 * How a view of the client sends: its per-request timeout (ms), what a rate limit does to a
 * request (wait: asked again; refuse: thrown to the caller) and its class at the limiter.
 */
export type Lane = { timeoutMs: number; rateLimits: "wait" | "refuse"; priority: RequestPriority };

/**
 * Runs one request of `cost` calls on `lane` with the client's retry policy; `run` sends one
 * attempt.
 */
export type WithRetries = <T>(
  method: string,
  cost: number,
  lane: Lane,
  run: (endpoint: RpcEndpoint, sending: Sending) => Promise<T>,
) => Promise<T>;

export type RpcRetriesDeps = {
  config: Pick<Config, "rpc">;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
  endpoints: RpcEndpoints;
  pacing: RpcPacing;
  batches: BatchPolicy;
};

/**
 * The client's retry policy. A request runs against endpoints until it succeeds, the error is not
 * retryable, or `rpc.retry.maxAttempts` failures are spent, with backoff and full jitter between
 * them. A provider's rate limit is not a failure: the request is asked again after a backoff with
 * full jitter (or the wait the provider named) for as long as it takes, and the limiter decides
 * whether the refusals are a share that cuts the rate. Each attempt is counted and timed in
 * metrics.
 */
export function createRpcRetries(deps: RpcRetriesDeps): WithRetries {
  const { config, logger, metrics, shutdown, endpoints, pacing, batches } = deps;

  return async function withRetries<T>(
    method: string,
    cost: number,
    lane: Lane,
    run: (endpoint: RpcEndpoint, sending: Sending) => Promise<T>,
  ): Promise<T> {
    const { maxAttempts, initialDelayMs, maxDelayMs } = config.rpc.retry;
    let lastEndpoint = "";
    // Attempts that failed: a hedged attempt whose two calls both fail is one failure, not two.
    const failed = new Set<number>();
    let refusals = 0;
    const once = async (count: number, hedge: number): Promise<T> => {
      shutdown.throwIfKilled();
      const endpoint = endpoints.pick(count + hedge);
      lastEndpoint = endpoint.label;
      const sending: Sending = { cost, priority: lane.priority, sentAt: undefined };
      const started = performance.now();
      try {
        await endpoints.ensureVerified(endpoint);
        const result = await run(endpoint, sending);
        metrics.rpcRequests.inc({ method, outcome: "ok" });
        pacing.answered(sending);
        if (cost > 1) batches.answered(cost);
        return result;
      } catch (error) {
        const classified = classifyRpcError(method, error);
        // Never sent: neither a request to count nor a failure.
        if (classified instanceof HeldBackError) throw classified;
        metrics.rpcRequests.inc({ method, outcome: outcomeOf(classified) });
        if (classified instanceof RateLimitedError && lane.rateLimits === "wait")
          pacing.refused(sending, classified, ++refusals);
        else if (classified instanceof RetryableError) failed.add(count);
        if (classified instanceof RetryableError && !(classified instanceof RateLimitedError))
          endpoints.failed(endpoint);
        if (classified instanceof RateLimitedError && cost > 1)
          throw batches.refused(cost, classified);
        throw classified;
      } finally {
        metrics.rpcDuration.observe({ method }, (performance.now() - started) / 1_000);
      }
    };
    const hedgeAfterMs =
      lane.priority === "head" && lane.timeoutMs < config.rpc.timeoutMs
        ? lane.timeoutMs * HEDGE_SHARE
        : undefined;
    const attempt = ({ count }: { count: number }) =>
      hedgeAfterMs === undefined
        ? once(count, 0)
        : hedgedCall((hedge) => once(count, hedge), hedgeAfterMs);
    try {
      return await withRetry(attempt, {
        retryCount: Number.POSITIVE_INFINITY,
        shouldRetry: ({ error }) =>
          error instanceof RetryableError &&
          !(error instanceof BatchOverRateError) &&
          !shutdown.isKilled() &&
          (error instanceof HeldBackError ||
            (error instanceof RateLimitedError
              ? lane.rateLimits === "wait"
              : failed.size < maxAttempts)),
        // A held-back request goes back to the limiter at once; a refused one backs off (a named
        // wait first, withRetry).
        delay: ({ error }) =>
          error instanceof HeldBackError
            ? 0
            : error instanceof RateLimitedError
              ? backoffDelayMs(refusals - 1, REFUSED_RETRY_BACKOFF)
              : backoffDelayMs(failed.size - 1, { initialDelayMs, maxDelayMs }),
        onRetry: ({ error, delayMs }) => {
          // A held-back request was never sent: nothing to report.
          if (error instanceof HeldBackError) return;
          logger.warn({
            msg: "Retrying RPC request",
            method,
            endpoint: lastEndpoint,
            attempt: failed.size,
            max_attempts: maxAttempts,
            rate_limited: error instanceof RateLimitedError,
            delay_ms: Math.round(delayMs),
            error: (error as RetryableError).shortMessage,
          });
        },
        signal: shutdown.signal,
      });
    } catch (error) {
      if (
        !(error instanceof RetryableError) ||
        error instanceof BatchOverRateError ||
        error instanceof RateLimitedError ||
        shutdown.isKilled()
      )
        throw error;
      logger.warn({
        msg: "Gave up on RPC request",
        method,
        endpoint: lastEndpoint,
        attempt: failed.size,
        max_attempts: maxAttempts,
        error: error.shortMessage,
      });
      throw new RetryableError(
        `${method} failed after ${failed.size} attempts (last from ${lastEndpoint}): ${error.shortMessage}`,
        { cause: error },
      );
    }
  };
}
