import type { IncomingMessage } from "node:http";
import { postJson, readAnswer } from "./httpPost.js";
import { redactText, redactUrl } from "../ops/redact.js";
import { requestDeadline } from "../ops/requestDeadline.js";
import { ShutdownError } from "../errors/base.js";
import {
  RangeLimitError,
  RateLimitedError,
  RpcTransportError,
  type RangeErrorHint,
} from "../errors/rpc.js";
import { parseRetryAfterMs } from "../ops/withRetry.js";

/**
 * Sends one JSON body to one endpoint and returns the body of the answer. `timeoutMs`, when given,
 * replaces the transport's default timeout for this request (the realtime path wants a short one).
 */
export type HttpTransport = ((
  url: string,
  body: string,
  signal: AbortSignal,
  timeoutMs?: number,
) => Promise<AnswerBody>) & {
  /**
   * A transport made by createHttpTransport carries its settings, so another thread (the decode
   * thread) can make the same one and send a request itself. A test's wrapper around it has none:
   * every request then goes through the wrapper, on the client's thread.
   */
  settings?: HttpTransportSettings;
};

export type HttpTransportSettings = { timeoutMs: number; maxResponseBytes: number };

/**
 * An answer's body: UTF-8 bytes as received (in a buffer of their own, so a backfill window's can
 * move to the decode thread undecoded), or text.
 */
export type AnswerBody = string | Uint8Array;

export const answerText = (body: AnswerBody): string =>
  typeof body === "string"
    ? body
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");

/**
 * A transport over Node's HTTP client (httpPost.ts) with a per-request timeout and a cap on the
 * answer's size: an answer over `maxResponseBytes` is cut off while streaming (memory stays
 * bounded) and reported as a range limit so the caller splits the window.
 */
export function createHttpTransport(options: HttpTransportSettings): HttpTransport {
  const transport: HttpTransport = async (url, body, signal, timeoutMs = options.timeoutMs) => {
    // One deadline per request, fed by the timeout and the shutdown signal (ops/requestDeadline.ts).
    const deadline = requestDeadline(timeoutMs, signal);
    try {
      let response: IncomingMessage;
      try {
        response = await postJson(url, body, deadline.signal);
      } catch (error) {
        throw transportFailure(url, error, deadline.timedOut(), signal);
      }
      const status = response.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      if (status === 413) {
        response.destroy();
        throw new RangeLimitError(`${redactUrl(url)} answered 413 Payload Too Large`, {
          kind: "tooLarge",
        });
      }
      // Only a refusal's wait is honoured (RFC 9110 sends it with 429 and 503).
      const retryAfterMs =
        status === 429 || status === 503
          ? parseRetryAfterMs(response.headers["retry-after"])
          : undefined;
      let bytes: Buffer;
      try {
        bytes = await readCapped(
          response,
          ok ? options.maxResponseBytes : MAX_ERROR_BODY_BYTES,
          url,
        );
      } catch (error) {
        if (error instanceof RangeLimitError && ok) throw error;
        throw transportFailure(
          url,
          error,
          deadline.timedOut(),
          signal,
          ok ? undefined : { status, retryAfterMs },
        );
      }
      if (ok) return bytes;
      const text = bytes.toString("utf8");
      // A 429 is a rate limit whatever its body says; a 503 that names its wait is waited out, whatever its body.
      if (status !== 429 && retryAfterMs === undefined && isJsonRpcError(text)) return text;
      throw refusal(url, status, retryAfterMs);
    } finally {
      deadline.dispose();
    }
  };
  transport.settings = { timeoutMs: options.timeoutMs, maxResponseBytes: options.maxResponseBytes };
  return transport;
}

/**
 * How a request sent on another thread failed, as plain data (errors lose their class crossing
 * threads): the transport's two failures, or the abort that the shutdown asked for.
 */
export type TransportFailure =
  | { kind: "rangeLimit"; message: string; hint: RangeErrorHint }
  | { kind: "transport" | "rateLimited"; message: string; retryAfterMs: number | undefined }
  | { kind: "aborted" };

/** The failure a transport threw, as data; anything else is not a transport's failure (a bug) and is rethrown. */
export function describeTransportFailure(error: unknown, aborted: boolean): TransportFailure {
  if (aborted) return { kind: "aborted" };
  if (error instanceof RangeLimitError)
    return { kind: "rangeLimit", message: error.shortMessage, hint: error.hint };
  if (error instanceof RpcTransportError)
    return {
      kind: error instanceof RateLimitedError ? "rateLimited" : "transport",
      message: error.shortMessage,
      retryAfterMs: error.retryAfterMs,
    };
  throw error;
}

/** The error the transport threw on the other thread, rebuilt: an abort is the shutdown's (the only signal that aborts one). */
export function transportFailureError(failure: TransportFailure): Error {
  if (failure.kind === "rangeLimit") return new RangeLimitError(failure.message, failure.hint);
  if (failure.kind === "rateLimited")
    return new RateLimitedError(failure.message, { retryAfterMs: failure.retryAfterMs });
  if (failure.kind === "transport")
    return new RpcTransportError(failure.message, { retryAfterMs: failure.retryAfterMs });
  return new ShutdownError();
}

/** Error bodies are short; one longer than this is not a JSON-RPC error worth reading. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * Whether a non-2xx body is a JSON-RPC error (or a batch of answers) that the client should classify.
 * Note: Optimism's proxyd, in front of Base's public endpoint, sends JSON-RPC errors with HTTP 400
 * (-32602 "block range greater than N max"), 500 (-32020 "backend response too large") and 503
 * ("no backend is currently healthy to serve traffic"); throwing the body away hides range errors.
 */
function isJsonRpcError(text: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  const answers = Array.isArray(parsed) ? parsed : [parsed];
  return (
    answers.length > 0 &&
    answers.every((a) => typeof a === "object" && a !== null && "error" in a && !("result" in a))
  );
}

async function readCapped(
  response: IncomingMessage,
  maxBytes: number,
  url: string,
): Promise<Buffer> {
  const { bytes, truncated } = await readAnswer(response, maxBytes);
  if (truncated)
    throw new RangeLimitError(
      `${redactUrl(url)} answer exceeds rpc.maxResponseBytes (${maxBytes})`,
      { kind: "tooLarge" },
    );
  return bytes;
}

/** A non-2xx answer as an error: a 429 is the provider's rate limit; any wait it named travels with the error. */
function refusal(url: string, status: number, retryAfterMs: number | undefined): RpcTransportError {
  if (status === 429)
    return new RateLimitedError(`${redactUrl(url)} answered HTTP 429 Too Many Requests`, {
      retryAfterMs,
    });
  return new RpcTransportError(`${redactUrl(url)} answered HTTP ${status}`, { retryAfterMs });
}

function transportFailure(
  url: string,
  error: unknown,
  timedOut: boolean,
  signal: AbortSignal,
  answered?: { status: number; retryAfterMs: number | undefined },
): Error {
  if (signal.aborted) return signal.reason instanceof Error ? signal.reason : new Error("aborted");
  if (timedOut) return new RpcTransportError(`${redactUrl(url)} timed out`);
  if (answered !== undefined) return refusal(url, answered.status, answered.retryAfterMs);
  const cause =
    error instanceof Error
      ? error.cause instanceof Error
        ? error.cause.message
        : error.message
      : String(error);
  return new RpcTransportError(`${redactUrl(url)} unreachable: ${redactText(cause)}`);
}
