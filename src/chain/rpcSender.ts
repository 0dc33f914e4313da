import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { RpcResponseError } from "../errors/rpc.js";
import type { Shutdown } from "../ops/shutdown.js";
import {
  answerText,
  type AnswerBody,
  type HttpTransport,
  type HttpTransportSettings,
} from "./httpTransport.js";
import { unwrap } from "./jsonRpcAnswer.js";
import type { RpcEndpoint } from "./rpcEndpoints.js";
import type { RpcPacing, Sending } from "./rpcPacing.js";

export type RpcCall = { method: string; params: readonly unknown[] };

/**
 * Sends a request and reads its answer somewhere else than the client's thread (the decode thread
 * sends a backfill window's, so the answer's bytes never reach the main thread), with a transport
 * made from `request.transport`. It throws what the transport would (transportFailureError
 * rebuilds it) and what `accept` would: the client's rate limit, retries, failover and
 * classification are the same. `signal` is the shutdown's; `onLeft` is told when the request left
 * (performance.now() ms of this thread): the rate limiter paces from then. Used only when the
 * client's transport is createHttpTransport's.
 */
export type SendElsewhere<T> = (
  request: OutgoingRequest,
  signal: AbortSignal,
  onLeft?: (at: number) => void,
) => Promise<T>;
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

export type RpcSender = {
  /**
   * Reserves ids for `count` calls and returns the first: ids run on across every view of the
   * client.
   */
  nextIds: (count: number) => number;
  /** One JSON-RPC call through the pacing: its result, or the node's error thrown. */
  call: (
    endpoint: RpcEndpoint,
    method: string,
    params: readonly unknown[],
    timeoutMs: number,
    sending: Sending,
  ) => Promise<unknown>;
  /**
   * Sends `body` through the pacing and parses the answer's JSON (not checked: the caller knows its
   * shape).
   */
  post: (
    endpoint: RpcEndpoint,
    body: string,
    timeoutMs: number,
    sending: Sending,
  ) => Promise<unknown>;
  /**
   * Sends a request whose answer `accept` reads, or that `elsewhere` sends and reads when it can.
   */
  sendRaw: <T>(
    endpoint: RpcEndpoint,
    body: string,
    id: number,
    timeoutMs: number,
    sending: Sending,
    accept: (body: AnswerBody) => Promise<T>,
    elsewhere?: SendElsewhere<T>,
  ) => Promise<T>;
};

/**
 * One attempt's sending: its JSON-RPC ids and body, the pacing, the transport here or on another
 * thread.
 */
export function createRpcSender(deps: {
  transport: HttpTransport;
  pacing: RpcPacing;
  shutdown: Shutdown;
}): RpcSender {
  const { transport, pacing, shutdown } = deps;
  let nextId = 1;

  const nextIds = (count: number): number => {
    const first = nextId;
    nextId += count;
    return first;
  };

  const send = (
    endpoint: RpcEndpoint,
    body: string,
    timeoutMs: number,
    sending: Sending,
  ): Promise<AnswerBody> =>
    pacing.paced(sending, () => transport(endpoint.url, body, shutdown.signal, timeoutMs));

  async function post(
    endpoint: RpcEndpoint,
    body: string,
    timeoutMs: number,
    sending: Sending,
  ): Promise<unknown> {
    const answer = await send(endpoint, body, timeoutMs, sending);
    // Parsing a large answer holds the thread for milliseconds: messages already received (a
    // pre-confirmation, a new head) are handled first. Likewise before checking it (rpcClient.ts).
    await yieldToEventLoop();
    try {
      return JSON.parse(answerText(answer));
    } catch {
      throw new RpcResponseError(`${endpoint.label} answered with invalid JSON`);
    }
  }

  return {
    nextIds,
    post,

    call: async (endpoint, method, params, timeoutMs, sending) => {
      const id = nextIds(1);
      const answer = await post(
        endpoint,
        JSON.stringify({ jsonrpc: "2.0", id, method, params }),
        timeoutMs,
        sending,
      );
      return unwrap(answer, method, id, endpoint.label);
    },

    sendRaw: (endpoint, body, id, timeoutMs, sending, accept, elsewhere) => {
      const settings = transport.settings;
      if (elsewhere !== undefined && settings !== undefined) {
        const request = {
          url: endpoint.url,
          body,
          id,
          endpoint: endpoint.label,
          timeoutMs,
          transport: settings,
        };
        const onLeft = (at: number) => pacing.leftAt(sending, at);
        return pacing.paced(
          sending,
          () => elsewhere({ ...request, ...pacing.sharedRefusals() }, shutdown.signal, onLeft),
          true,
        );
      }
      return send(endpoint, body, timeoutMs, sending).then(accept);
    },
  };
}

/** A batch request's JSON: the calls with ids from `firstId`. */
export const batchBody = (calls: readonly RpcCall[], firstId: number): string =>
  JSON.stringify(
    calls.map((call, i) => ({
      jsonrpc: "2.0",
      id: firstId + i,
      method: call.method,
      params: call.params,
    })),
  );
