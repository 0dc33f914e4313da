import { readCappedBody } from "../ops/readCappedBody.js";
import { redactText, redactUrl } from "../ops/redact.js";
import { RangeLimitError, RpcTransportError } from "./rpcErrors.js";

/** Sends one JSON body to one endpoint and returns the body of the answer. */
export type HttpTransport = (url: string, body: string, signal: AbortSignal) => Promise<string>;

/**
 * fetch-based transport with a per-request timeout and a cap on the answer's size: an answer over
 * `maxResponseBytes` is cut off while streaming (memory stays bounded) and reported as a range
 * limit so the caller splits the window.
 */
export function createHttpTransport(options: { timeoutMs: number; maxResponseBytes: number }): HttpTransport {
  return async (url, body, signal) => {
    // One controller per request, fed by the timeout and the shutdown signal; the listener on the
    // long-lived shutdown signal is removed when the request ends, so none pile up.
    const controller = new AbortController();
    const timeout = { fired: false };
    const timer = setTimeout(() => {
      timeout.fired = true;
      controller.abort();
    }, options.timeoutMs);
    const onShutdown = () => controller.abort(signal.reason);
    if (signal.aborted) onShutdown();
    else signal.addEventListener("abort", onShutdown, { once: true });
    try {
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body,
          signal: controller.signal,
        });
      } catch (error) {
        throw transportFailure(url, error, timeout.fired, signal);
      }
      if (response.status === 413)
        throw new RangeLimitError(`${redactUrl(url)} answered 413 Payload Too Large`, { kind: "tooLarge" });
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw new RpcTransportError(`${redactUrl(url)} answered HTTP ${response.status}`);
      }
      try {
        return await readCapped(response, options.maxResponseBytes, url);
      } catch (error) {
        if (error instanceof RangeLimitError) throw error;
        throw transportFailure(url, error, timeout.fired, signal);
      }
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onShutdown);
    }
  };
}

async function readCapped(response: Response, maxBytes: number, url: string): Promise<string> {
  const { text, truncated } = await readCappedBody(response, maxBytes);
  if (truncated) throw new RangeLimitError(`${redactUrl(url)} answer exceeds rpc.maxResponseBytes (${maxBytes})`, { kind: "tooLarge" });
  return text;
}

function transportFailure(url: string, error: unknown, timedOut: boolean, signal: AbortSignal): Error {
  if (signal.aborted) return signal.reason instanceof Error ? signal.reason : new Error("aborted");
  if (timedOut) return new RpcTransportError(`${redactUrl(url)} timed out`);
  const cause = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
  return new RpcTransportError(`${redactUrl(url)} unreachable: ${redactText(cause)}`);
}
