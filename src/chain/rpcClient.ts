import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Config } from "../config/types.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import { createBatchPolicy } from "./batchPolicy.js";
import { createHttpTransport, type AnswerBody, type HttpTransport } from "./httpTransport.js";
import { batchResults, type BatchResult } from "./jsonRpcAnswer.js";
import { createRpcEndpoints } from "./rpcEndpoints.js";
import { createRpcPacing } from "./rpcPacing.js";
import { createRpcRetries, type Lane } from "./rpcRetries.js";
import { batchBody, createRpcSender, type RpcCall, type SendElsewhere } from "./rpcSender.js";

export type { BatchResult, RpcCall };
export type { OutgoingRequest, SendElsewhere } from "./rpcSender.js";

export type RpcClient = {
  /**
   * One call with retries, failover and the rate limit; throws RangeLimitError, RetryableError or a
   * fatal error.
   * `parse` checks the result inside the retry loop (it may be async), so a garbage answer is
   * retried like a failed request.
   */
  request: <T = unknown>(
    method: string,
    params: readonly unknown[],
    parse?: (result: unknown) => T | Promise<T>,
  ) => Promise<T>;
  /**
   * One call whose answer's body `accept` reads itself (a backfill window's goes to the decode
   * thread unparsed): retries, failover and the rate limit as for `request`, and whatever `accept`
   * throws is classified like a failed request (a node's error, a damaged answer).
   */
  requestRaw: <T>(
    method: string,
    params: readonly unknown[],
    accept: (answer: RawAnswer) => Promise<T>,
    elsewhere?: SendElsewhere<T>,
  ) => Promise<T>;
  /**
   * Several calls in one JSON-RPC batch (one HTTP request); per-call errors come back as values.
   */
  batch: (calls: readonly RpcCall[]) => Promise<BatchResult[]>;
  /**
   * A batch whose answer's body `accept` reads itself (jsonRpcAnswer.ts's batchResults checks it),
   * as requestRaw.
   */
  batchRaw: <T>(
    calls: readonly RpcCall[],
    accept: (answer: RawBatchAnswer) => Promise<T>,
    elsewhere?: SendElsewhere<T>,
  ) => Promise<T>;
  /**
   * Most calls one batch should carry now: what the rate limiter allows in one second (every call
   * is billed), and less than a batch the provider refused. Callers batch through
   * chain/inBatches.ts.
   */
  batchCalls: () => number;
  /**
   * Whether the client found a provider's rate limit since it started (refusals more than strays):
   * it will meet it again.
   */
  rateLimited: () => boolean;
  /**
   * Asks every endpoint for its chain id; throws WrongChainError on a mismatch, warns on an
   * unreachable one.
   */
  verifyEndpoints: () => Promise<void>;
  /**
   * The same client (endpoints, health, rate limit) with another per-request timeout, in ms: the
   * realtime path uses a short one so a hung request moves to the next endpoint within a block or
   * two. A head request with such a timeout is hedged: unanswered after rpcRetries.ts's HEDGE_SHARE
   * of it, it is sent again (to the next endpoint when there are several) and the first answer
   * wins.
   */
  withTimeout: (timeoutMs: number) => RpcClient;
  /**
   * The same client for work that can wait (backfill, pending view, attribution): it yields to the
   * head's.
   */
  background: () => RpcClient;
  /**
   * The same client for reads that pace themselves (the pending view: its poll and watchdog share
   * one backoff, sync/preconfirmed/preconfirmedBackoff.ts): a rate limit is thrown at once as RateLimitedError,
   * neither asked again nor slowing the rest of the client. Note: Base's pre-confirmation endpoint
   * rate-limits pending reads on their own; the head path must not wait for them.
   */
  refusingRateLimits: () => RpcClient;
};

/** An answer's body as received, with the request's id and the endpoint's redacted label. */
export type RawAnswer = { body: AnswerBody; id: number; endpoint: string };
/** A batch's answer as received: its calls' ids run from `firstId`. */
export type RawBatchAnswer = { body: AnswerBody; firstId: number; endpoint: string };

export type RpcClientDeps = {
  config: Pick<Config, "chainId" | "rpc">;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
};

/**
 * JSON-RPC over HTTP, composed of its policies, each in its own file:
 * - rpcPacing.ts: every request passes the rate limiter (rateLimiter.ts: two priority classes,
 *   paced just under the limit a provider showed), from this thread or the decode thread;
 * - rpcEndpoints.ts: failover to the next endpoint when one fails, and each endpoint's chain id
 *   checked before its first use;
 * - rpcRetries.ts: retries with backoff and full jitter, rate refusals asked again, hedged head
 *   requests;
 * - batchPolicy.ts: how many calls a batch carries;
 * - rpcSender.ts: the JSON-RPC ids and bodies, sent over the transport here or on another thread.
 * The views below (head, background, short timeout, refusing rate limits) share all of them.
 */
export function createRpcClient(
  deps: RpcClientDeps,
  options: { transport?: HttpTransport } = {},
): RpcClient {
  const { config, metrics, shutdown } = deps;
  const logger = deps.logger.child({ component: "rpc" });
  const transport =
    options.transport ??
    createHttpTransport({
      timeoutMs: config.rpc.timeoutMs,
      maxResponseBytes: config.rpc.maxResponseBytes,
    });
  const pacing = createRpcPacing({ config, logger, metrics, shutdown });
  const sender = createRpcSender({ transport, pacing, shutdown });
  const endpoints = createRpcEndpoints({
    urls: config.rpc.http,
    chainId: config.chainId,
    logger,
    askChainId: (endpoint) =>
      sender.call(endpoint, "eth_chainId", [], config.rpc.timeoutMs, {
        cost: 1,
        priority: "head",
        sentAt: undefined,
      }),
  });
  const batches = createBatchPolicy(pacing);
  const withRetries = createRpcRetries({
    config,
    logger,
    metrics,
    shutdown,
    endpoints,
    pacing,
    batches,
  });

  const view = (lane: Lane): RpcClient => ({
    request: <T>(
      method: string,
      params: readonly unknown[],
      parse?: (result: unknown) => T | Promise<T>,
    ) =>
      withRetries(method, 1, lane, async (endpoint, sending) => {
        const result = await sender.call(endpoint, method, params, lane.timeoutMs, sending);
        if (parse === undefined) return result as T;
        await yieldToEventLoop();
        return parse(result);
      }),

    requestRaw: (method, params, accept, elsewhere) =>
      withRetries(method, 1, lane, (endpoint, sending) => {
        const id = sender.nextIds(1);
        const body = JSON.stringify({ jsonrpc: "2.0", id, method, params });
        return sender.sendRaw(
          endpoint,
          body,
          id,
          lane.timeoutMs,
          sending,
          (answer) => accept({ body: answer, id, endpoint: endpoint.label }),
          elsewhere,
        );
      }),

    batch: (calls) =>
      withRetries(calls[0]?.method ?? "batch", calls.length, lane, async (endpoint, sending) => {
        if (calls.length === 0) return [];
        const firstId = sender.nextIds(calls.length);
        const answer = await sender.post(
          endpoint,
          batchBody(calls, firstId),
          lane.timeoutMs,
          sending,
        );
        return batchResults(
          answer,
          calls.map((call) => call.method),
          firstId,
          endpoint.label,
        );
      }),

    batchRaw: (calls, accept, elsewhere) =>
      withRetries(calls[0]?.method ?? "batch", calls.length, lane, (endpoint, sending) => {
        const firstId = sender.nextIds(calls.length);
        const body = batchBody(calls, firstId);
        return sender.sendRaw(
          endpoint,
          body,
          firstId,
          lane.timeoutMs,
          sending,
          (answer) => accept({ body: answer, firstId, endpoint: endpoint.label }),
          elsewhere,
        );
      }),

    batchCalls: batches.calls,
    rateLimited: pacing.rateLimited,
    verifyEndpoints: endpoints.verifyAll,

    withTimeout: (timeoutMs) => view({ ...lane, timeoutMs }),
    refusingRateLimits: () => view({ ...lane, rateLimits: "refuse" }),
    background: () => view({ ...lane, priority: "background" }),
  });
  return view({ timeoutMs: config.rpc.timeoutMs, rateLimits: "wait", priority: "head" });
}
