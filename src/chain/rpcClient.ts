import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Config } from "../config/types.js";
import { RetryableError, ShutdownError } from "../errors/base.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { redactUrl } from "../ops/redact.js";
import type { Shutdown } from "../ops/shutdown.js";
import { answerText, createHttpTransport, type AnswerBody, type HttpTransport, type HttpTransportSettings } from "./httpTransport.js";
import { batchResults, unwrap, type BatchResult } from "./jsonRpcAnswer.js";
import { backoffDelayMs, retryAfterOf, withRetry } from "../ops/withRetry.js";
import { createBatchSize } from "./batchSize.js";
import { classifyRpcError, outcomeOf } from "./classifyRpcError.js";
import { hedgedCall } from "./hedgedCall.js";
import { callsPerBatch, createRateLimiter, type RequestPriority } from "./rateLimiter.js";
import { BatchOverRateError, HeldBackError, RateLimitedError, RpcResponseError, WrongChainError } from "../errors/rpc.js";

export type RpcCall = { method: string; params: readonly unknown[] };
export type { BatchResult };

export type RpcClient = {
  /**
   * One call with retries, failover and the rate limit; throws RangeLimitError, RetryableError or a fatal error.
   * `parse` checks the result inside the retry loop (it may be async), so a garbage answer is retried like a failed request.
   */
  request: <T = unknown>(method: string, params: readonly unknown[], parse?: (result: unknown) => T | Promise<T>) => Promise<T>;
  /**
   * One call whose answer's body `accept` reads itself (a backfill window's goes to the decode
   * thread unparsed): retries, failover and the rate limit as for `request`, and whatever `accept`
   * throws is classified like a failed request (a node's error, a damaged answer).
   */
  requestRaw: <T>(method: string, params: readonly unknown[], accept: (answer: RawAnswer) => Promise<T>, elsewhere?: SendElsewhere<T>) => Promise<T>;
  /** Several calls in one JSON-RPC batch (one HTTP request); per-call errors come back as values. */
  batch: (calls: readonly RpcCall[]) => Promise<BatchResult[]>;
  /** A batch whose answer's body `accept` reads itself (jsonRpcAnswer.ts's batchResults checks it), as requestRaw. */
  batchRaw: <T>(calls: readonly RpcCall[], accept: (answer: RawBatchAnswer) => Promise<T>, elsewhere?: SendElsewhere<T>) => Promise<T>;
  /**
   * Most calls one batch should carry now: what the rate limiter allows in one second (every call
   * is billed), and less than a batch the provider refused. Callers batch through chain/inBatches.ts.
   */
  batchCalls: () => number;
  /** Whether the client found a provider's rate limit since it started (refusals more than strays): it will meet it again. */
  rateLimited: () => boolean;
  /** Asks every endpoint for its chain id; throws WrongChainError on a mismatch, warns on an unreachable one. */
  verifyEndpoints: () => Promise<void>;
  /**
   * The same client (endpoints, health, rate limit) with another per-request timeout, in ms: the
   * realtime path uses a short one so a hung request moves to the next endpoint within a block or
   * two. A head request with such a timeout is hedged: unanswered after HEDGE_SHARE of it, it is sent
   * again (to the next endpoint when there are several) and the first answer wins.
   */
  withTimeout: (timeoutMs: number) => RpcClient;
  /** The same client for work that can wait (backfill, pending view, attribution): it yields to the head's. */
  background: () => RpcClient;
  /**
   * The same client for reads that pace themselves (the pending view: its poll and watchdog share
   * one backoff, sync/pendingBackoff.ts): a rate limit is thrown at once as RateLimitedError,
   * neither asked again nor slowing the rest of the client. Note: Base's pre-confirmation endpoint
   * rate-limits pending reads on their own; the head path must not wait for them.
   */
  refusingRateLimits: () => RpcClient;
};

/** An answer's body as received, with the request's id and the endpoint's redacted label. */
export type RawAnswer = { body: AnswerBody; id: number; endpoint: string };
/** A batch's answer as received: its calls' ids run from `firstId`. */
export type RawBatchAnswer = { body: AnswerBody; firstId: number; endpoint: string };

/**
 * Sends a request and reads its answer somewhere else than the client's thread (the decode thread
 * sends a backfill window's, so the answer's bytes never reach the main thread), with a transport
 * made from `request.transport`. It throws what the transport would (transportFailureError
 * rebuilds it) and what `accept` would: the client's rate limit, retries, failover and
 * classification are the same. `signal` is the shutdown's; `onLeft` is told when the request left
 * (performance.now() ms of this thread): the rate limiter paces from then. Used only when the
 * client's transport is createHttpTransport's.
 */
export type SendElsewhere<T> = (request: OutgoingRequest, signal: AbortSignal, onLeft?: (at: number) => void) => Promise<T>;
/**
 * One JSON-RPC request as the client would send it: `id` is the request's (a batch's first call's).
 * `refusals` counts the provider's rate refusals (shared with the thread that sends it) and
 * `refusalsSeen` is its count when the limiter let the request go: a request that has not left by
 * the time the count moved is not sent (HeldBackError).
 */
export type OutgoingRequest = {
  url: string;
  body: string;
  id: number;
  endpoint: string;
  timeoutMs: number;
  transport: HttpTransportSettings;
  refusals?: Int32Array;
  refusalsSeen?: number;
};

export type RpcClientDeps = {
  config: Pick<Config, "chainId" | "rpc">;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
};

/**
 * Most requests in flight at once: more than the backfill's windows plus the live path ever ask
 * for. The limit starts at one and grows by one every round trip up to this (the rate limiter's
 * slow start); head requests may add rateLimiter.ts's HEAD_RESERVED_REQUESTS.
 */
const MAX_REQUESTS_IN_FLIGHT = 32;

/** One attempt's request as the rate limiter sees it: its cost (calls), class, and when it left (performance.now() ms). */
type Sending = { cost: number; priority: RequestPriority; sentAt: number | undefined };

/**
 * A head request with a short timeout (withTimeout) unanswered after this share of it is sent again:
 * two hung requests in a row no longer cost two whole timeouts (issue 41: 8 blocks behind).
 */
export const HEDGE_SHARE = 0.4;
/** Backoff (full jitter) before a request refused for the rate is asked again, unless the provider named a wait. */
const REFUSED_RETRY_BACKOFF = { initialDelayMs: 100, maxDelayMs: 5_000 };

/** An endpoint that failed is skipped for this long while another is healthy. */
const ENDPOINT_COOLDOWN_MS = 30_000;

/**
 * JSON-RPC over HTTP. Every request passes the rate limiter (rateLimiter.ts: two priority classes,
 * paced just under the limit a provider showed), is retried with backoff and full jitter, and moves
 * to the next endpoint when one fails. Before an endpoint's first use its chain id is checked.
 */
export function createRpcClient(deps: RpcClientDeps, options: { transport?: HttpTransport } = {}): RpcClient {
  const { config, metrics, shutdown } = deps;
  const logger = deps.logger.child({ component: "rpc" });
  const transport =
    options.transport ??
    createHttpTransport({ timeoutMs: config.rpc.timeoutMs, maxResponseBytes: config.rpc.maxResponseBytes });
  const limiter = createRateLimiter({
    requestsPerSecond: config.rpc.requestsPerSecond ?? Number.POSITIVE_INFINITY,
    concurrency: MAX_REQUESTS_IN_FLIGHT,
    signal: shutdown.signal,
  });
  const endpoints = config.rpc.http.map((url) => ({
    url,
    label: redactUrl(url),
    failedAt: 0,
    verified: undefined as Promise<void> | undefined,
  }));
  type Endpoint = (typeof endpoints)[number];
  let nextId = 1;
  /** The provider's rate refusals so far, shared with the threads that send requests (OutgoingRequest). */
  const refusals = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));

  function pickEndpoint(attempt: number): Endpoint {
    const now = Date.now();
    const healthy = endpoints.filter((e) => now - e.failedAt > ENDPOINT_COOLDOWN_MS);
    const pool = healthy.length > 0 ? healthy : endpoints;
    // Prefer the first healthy endpoint; on retries rotate so one bad endpoint cannot exhaust every attempt.
    return pool[attempt % pool.length]!;
  }

  /** Passes the limiter (one token per call of the request) and notes when the request left, in `sending`. */
  const paced = <T>(sending: Sending, task: () => Promise<T>): Promise<T> =>
    limiter.run(
      sending.cost,
      (sentAt) => {
        sending.sentAt = sentAt;
        return task();
      },
      sending.priority,
    );

  const send = (endpoint: Endpoint, body: string, timeoutMs: number, sending: Sending): Promise<AnswerBody> =>
    paced(sending, () => transport(endpoint.url, body, shutdown.signal, timeoutMs));

  /** Sends a request whose answer `accept` reads, or that `elsewhere` sends and reads when it can. */
  function sendRaw<T>(
    endpoint: Endpoint,
    body: string,
    id: number,
    timeoutMs: number,
    sending: Sending,
    accept: (body: AnswerBody) => Promise<T>,
    elsewhere?: SendElsewhere<T>,
  ): Promise<T> {
    const settings = transport.settings;
    if (elsewhere !== undefined && settings !== undefined) {
      const request = { url: endpoint.url, body, id, endpoint: endpoint.label, timeoutMs, transport: settings };
      // The other thread may send it later than it was let go (busy decoding): the pacing counts it from when it left.
      const onLeft = (at: number) => {
        if (sending.sentAt === undefined || at <= sending.sentAt) return;
        limiter.left(sending.sentAt, at, sending.cost);
        sending.sentAt = at;
      };
      return paced(sending, () => elsewhere({ ...request, refusals, refusalsSeen: Atomics.load(refusals, 0) }, shutdown.signal, onLeft));
    }
    return send(endpoint, body, timeoutMs, sending).then(accept);
  }

  async function post(endpoint: Endpoint, body: string, timeoutMs: number, sending: Sending): Promise<unknown> {
    const answer = await send(endpoint, body, timeoutMs, sending);
    // Parsing a large answer holds the thread for milliseconds: messages already received (a
    // pre-confirmation, a new head) are handled first. Likewise before checking it, below.
    await yieldToEventLoop();
    try {
      return JSON.parse(answerText(answer));
    } catch {
      throw new RpcResponseError(`${endpoint.label} answered with invalid JSON`);
    }
  }

  async function callOnce(endpoint: Endpoint, method: string, params: readonly unknown[], timeoutMs: number, sending: Sending): Promise<unknown> {
    const id = nextId++;
    const answer = await post(endpoint, JSON.stringify({ jsonrpc: "2.0", id, method, params }), timeoutMs, sending);
    return unwrap(answer, method, id, endpoint.label);
  }

  function ensureVerified(endpoint: Endpoint): Promise<void> {
    endpoint.verified ??= (async () => {
      const answer = await callOnce(endpoint, "eth_chainId", [], config.rpc.timeoutMs, { cost: 1, priority: "head", sentAt: undefined });
      if (typeof answer !== "string" || !/^0x[0-9a-fA-F]+$/.test(answer))
        throw new RpcResponseError(`${endpoint.label} answered eth_chainId with ${JSON.stringify(answer)}`);
      const chainId = Number.parseInt(answer, 16);
      if (chainId !== config.chainId)
        throw new WrongChainError(`${endpoint.label} serves chain ${chainId}, but the config says chainId ${config.chainId}`);
    })().catch((error: unknown) => {
      // Forget a failed check so the next use checks again; a wrong chain stays fatal anyway.
      endpoint.verified = undefined;
      throw error;
    });
    return endpoint.verified;
  }

  /**
   * Runs `run` against endpoints until it succeeds, the error is not retryable, or `rpc.retry.maxAttempts`
   * failures are spent. A provider's rate limit is not a failure: the request is asked again after
   * a backoff with full jitter (or the wait the provider named) for as long as it takes, and the
   * limiter decides whether the refusals are a share that cuts the rate.
   */
  async function withRetries<T>(method: string, cost: number, lane: Lane, run: (endpoint: Endpoint, sending: Sending) => Promise<T>): Promise<T> {
    const { maxAttempts, initialDelayMs, maxDelayMs } = config.rpc.retry;
    let lastEndpoint = "";
    // Attempts that failed: a hedged attempt whose two calls both fail is one failure, not two.
    const failed = new Set<number>();
    let refusals = 0;
    const once = async (count: number, hedge: number): Promise<T> => {
      shutdown.throwIfKilled();
      const endpoint = pickEndpoint(count + hedge);
      lastEndpoint = endpoint.label;
      const sending: Sending = { cost, priority: lane.priority, sentAt: undefined };
      const started = performance.now();
      try {
        await ensureVerified(endpoint);
        const result = await run(endpoint, sending);
        metrics.rpcRequests.inc({ method, outcome: "ok" });
        limiter.answered(cost, sending.sentAt ?? performance.now());
        if (cost > 1) batchSize.answered(cost);
        return result;
      } catch (error) {
        const classified = classifyRpcError(method, error);
        // Never sent: neither a request to count nor a failure.
        if (classified instanceof HeldBackError) throw classified;
        metrics.rpcRequests.inc({ method, outcome: outcomeOf(classified) });
        if (classified instanceof RateLimitedError && lane.rateLimits === "wait") slowDown(sending, classified, ++refusals);
        else if (classified instanceof RetryableError) failed.add(count);
        if (classified instanceof RetryableError && !(classified instanceof RateLimitedError)) endpoint.failedAt = Date.now();
        if (classified instanceof RateLimitedError && cost > 1) {
          batchSize.refused(cost);
          throw new BatchOverRateError(`a batch of ${cost} calls was refused for the rate; sending it in pieces of ${batchCalls()}: ${classified.shortMessage}`, { cause: classified });
        }
        throw classified;
      } finally {
        metrics.rpcDuration.observe({ method }, (performance.now() - started) / 1_000);
      }
    };
    const hedgeAfterMs = lane.priority === "head" && lane.timeoutMs < config.rpc.timeoutMs ? lane.timeoutMs * HEDGE_SHARE : undefined;
    const attempt = ({ count }: { count: number }) => (hedgeAfterMs === undefined ? once(count, 0) : hedgedCall((hedge) => once(count, hedge), hedgeAfterMs));
    try {
      return await withRetry(attempt, {
        retryCount: Number.POSITIVE_INFINITY,
        shouldRetry: ({ error }) =>
          error instanceof RetryableError &&
          !(error instanceof BatchOverRateError) &&
          !shutdown.isKilled() &&
          (error instanceof HeldBackError || (error instanceof RateLimitedError ? lane.rateLimits === "wait" : failed.size < maxAttempts)),
        // A held-back request goes back to the limiter at once; a refused one backs off (a named wait first, withRetry).
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
      if (!(error instanceof RetryableError) || error instanceof BatchOverRateError || error instanceof RateLimitedError || shutdown.isKilled()) throw error;
      logger.warn({ msg: "Gave up on RPC request", method, endpoint: lastEndpoint, attempt: failed.size, max_attempts: maxAttempts, error: error.shortMessage });
      throw new RetryableError(`${method} failed after ${failed.size} attempts (last from ${lastEndpoint}): ${error.shortMessage}`, { cause: error });
    }
  }

  const batchSize = createBatchSize();
  const batchCalls = (): number => callsPerBatch(limiter.state().requestsPerSecond, batchSize.current());

  /** A provider refused a request for its rate (its `refusals`-th): the limiter weighs it; a cut is logged. */
  function slowDown(sending: Sending, error: RateLimitedError, ofRequest: number): void {
    const retryAfterMs = retryAfterOf(error);
    // A request refused before it left (it never did) still tells the limiter the provider's mind.
    const cut = limiter.refused(sending.sentAt ?? performance.now(), retryAfterMs, sending.cost);
    // After a cut or a named wait, requests let go but not yet sent by another thread stay unsent (HeldBackError).
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
  }

  const view = (lane: Lane): RpcClient => ({
    request: <T>(method: string, params: readonly unknown[], parse?: (result: unknown) => T | Promise<T>) =>
      withRetries(method, 1, lane, async (endpoint, sending) => {
        const result = await callOnce(endpoint, method, params, lane.timeoutMs, sending);
        if (parse === undefined) return result as T;
        await yieldToEventLoop();
        return parse(result);
      }),

    requestRaw: (method, params, accept, elsewhere) =>
      withRetries(method, 1, lane, (endpoint, sending) => {
        const id = nextId++;
        const body = JSON.stringify({ jsonrpc: "2.0", id, method, params });
        return sendRaw(endpoint, body, id, lane.timeoutMs, sending, (answer) => accept({ body: answer, id, endpoint: endpoint.label }), elsewhere);
      }),

    batch: (calls) =>
      withRetries(calls[0]?.method ?? "batch", calls.length, lane, async (endpoint, sending) => {
        if (calls.length === 0) return [];
        const firstId = nextId;
        nextId += calls.length;
        const answer = await post(endpoint, batchBody(calls, firstId), lane.timeoutMs, sending);
        return batchResults(answer, calls.map((call) => call.method), firstId, endpoint.label);
      }),

    batchRaw: (calls, accept, elsewhere) =>
      withRetries(calls[0]?.method ?? "batch", calls.length, lane, (endpoint, sending) => {
        const firstId = nextId;
        nextId += calls.length;
        const body = batchBody(calls, firstId);
        return sendRaw(endpoint, body, firstId, lane.timeoutMs, sending, (answer) => accept({ body: answer, firstId, endpoint: endpoint.label }), elsewhere);
      }),

    batchCalls,
    rateLimited: () => limiter.state().refusedBefore,

    verifyEndpoints: async () => {
      for (const endpoint of endpoints) {
        try {
          await ensureVerified(endpoint);
        } catch (error) {
          if (error instanceof WrongChainError || error instanceof ShutdownError) throw error;
          logger.warn({ msg: "Could not verify RPC endpoint", endpoint: endpoint.label, error: (error as Error).message });
        }
      }
    },

    withTimeout: (timeoutMs) => view({ ...lane, timeoutMs }),
    refusingRateLimits: () => view({ ...lane, rateLimits: "refuse" }),
    background: () => view({ ...lane, priority: "background" }),
  });
  return view({ timeoutMs: config.rpc.timeoutMs, rateLimits: "wait", priority: "head" });
}

/**
 * How a view of the client sends: its per-request timeout (ms), what a rate limit does to a
 * request (wait: asked again; refuse: thrown to the caller) and its class at the limiter.
 */
type Lane = { timeoutMs: number; rateLimits: "wait" | "refuse"; priority: RequestPriority };

/** A batch request's JSON: the calls with ids from `firstId`. */
const batchBody = (calls: readonly RpcCall[], firstId: number): string =>
  JSON.stringify(calls.map((call, i) => ({ jsonrpc: "2.0", id: firstId + i, method: call.method, params: call.params })));
