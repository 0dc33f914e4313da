import type { RpcLogObject } from "./rpcLogObject.js";

/** Provider behaviour the devnet can imitate, set with `devnet_setFaults`. */
export type Faults = {
  /** Share of HTTP requests (0..1) answered 429 or 503 like an overloaded or rate-limited provider. */
  errorRate: number;
  /** Added to every HTTP answer. */
  latencyMs: number;
  /** eth_getLogs over more blocks than this is refused with reth's message. */
  maxBlockRange: number | undefined;
  /** eth_getLogs returning more logs than this is refused with reth's message and a range that fits. */
  maxResults: number | undefined;
  /**
   * Answer the way Base's public endpoint does behind Optimism's proxyd: JSON-RPC error bodies with
   * HTTP error statuses (400 for a block-range limit, 500 for an answer too large, 503/429 for outages).
   */
  proxyErrors: boolean;
  /**
   * Answer every HTTP read of the pending view with 429, as Base's rate-limited public pre-confirmation
   * endpoint does; `undefined` for none. `retryAfterSeconds` adds a Retry-After header (null: none).
   */
  pendingRateLimit: { retryAfterSeconds: number | null } | undefined;
  /** eth_sendRawTransactionSync misses the flashblock that included the transaction (base/base#3826). */
  sendSyncMissesFlashblock: boolean;
};

/** An error answer, and the HTTP status it travels with (200 unless a proxy says otherwise). */
export type FaultAnswer = { code: number; message: string; httpStatus: number };

export const NO_FAULTS: Faults = {
  errorRate: 0,
  latencyMs: 0,
  maxBlockRange: undefined,
  maxResults: undefined,
  proxyErrors: false,
  pendingRateLimit: undefined,
  sendSyncMissesFlashblock: false,
};

/** Checks a devnet_setFaults argument; unknown keys and bad values are refused, not ignored. */
export function parseFaults(value: unknown): Faults {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error("expected an object");
  const input = value as Record<string, unknown>;
  for (const key of Object.keys(input))
    if (
      ![
        "errorRate",
        "latencyMs",
        "maxBlockRange",
        "maxResults",
        "proxyErrors",
        "pendingRateLimit",
        "sendSyncMissesFlashblock",
      ].includes(key)
    )
      throw new Error(`unknown fault ${key}`);
  const number = (key: string, min: number, max: number): number | undefined => {
    const v = input[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !(v >= min && v <= max))
      throw new Error(`${key} must be a number from ${min} to ${max}`);
    return v;
  };
  const proxyErrors = input.proxyErrors ?? false;
  if (typeof proxyErrors !== "boolean") throw new Error("proxyErrors must be a boolean");
  const sendSyncMissesFlashblock = input.sendSyncMissesFlashblock ?? false;
  if (typeof sendSyncMissesFlashblock !== "boolean")
    throw new Error("sendSyncMissesFlashblock must be a boolean");
  return {
    proxyErrors,
    sendSyncMissesFlashblock,
    pendingRateLimit: parsePendingRateLimit(input.pendingRateLimit),
    errorRate: number("errorRate", 0, 1) ?? 0,
    latencyMs: number("latencyMs", 0, 60_000) ?? 0,
    maxBlockRange: number("maxBlockRange", 1, 1e9),
    maxResults: number("maxResults", 1, 1e9),
  };
}

/** A transient failure to answer instead of the real one, or undefined. */
export function injectedHttpFailure(faults: Faults): { status: number; body: string } | undefined {
  if (faults.errorRate === 0 || Math.random() >= faults.errorRate) return undefined;
  // Note: proxyd answers an outage with -32011 behind 503 and its rate limit with -32016 behind 429.
  if (faults.proxyErrors)
    return Math.random() < 0.5
      ? {
          status: 429,
          body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32016,"message":"over rate limit"}}',
        }
      : {
          status: 503,
          body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32011,"message":"no backend is currently healthy to serve traffic"}}',
        };
  return Math.random() < 0.5
    ? {
        status: 429,
        body: '{"jsonrpc":"2.0","id":null,"error":{"code":429,"message":"Too Many Requests"}}',
      }
    : { status: 503, body: "Service Unavailable" };
}

/** Note: reth (Base's node) words it "query exceeds max block range {n}"; proxyd "block range greater than {n} max" with HTTP 400. */
export function blockRangeError(faults: Faults, from: number, to: number): FaultAnswer | undefined {
  if (faults.maxBlockRange === undefined || to - from + 1 <= faults.maxBlockRange) return undefined;
  if (faults.proxyErrors)
    return {
      code: -32602,
      message: `block range greater than ${faults.maxBlockRange} max`,
      httpStatus: 400,
    };
  return {
    code: -32602,
    message: `query exceeds max block range ${faults.maxBlockRange}`,
    httpStatus: 200,
  };
}

/** Note: reth words it "query exceeds max results {n}, retry with the range {from}-{to}"; proxyd "backend response too large" (-32020) with HTTP 500. */
export function resultLimitError(
  faults: Faults,
  from: number,
  logs: readonly RpcLogObject[],
): FaultAnswer | undefined {
  if (faults.maxResults === undefined || logs.length <= faults.maxResults) return undefined;
  if (faults.proxyErrors)
    return { code: -32020, message: "backend response too large", httpStatus: 500 };
  // The largest range from `from` whose logs fit; at least one block.
  const cutoff = Number(logs[faults.maxResults]!.blockNumber);
  const to = Math.max(from, cutoff - 1);
  return {
    code: -32602,
    message: `query exceeds max results ${faults.maxResults}, retry with the range ${from}-${to}`,
    httpStatus: 200,
  };
}

function parsePendingRateLimit(value: unknown): Faults["pendingRateLimit"] {
  if (value === undefined || value === null || value === false) return undefined;
  if (typeof value !== "object" || Array.isArray(value))
    throw new Error("pendingRateLimit must be an object { retryAfterSeconds }");
  const seconds = (value as Record<string, unknown>).retryAfterSeconds ?? null;
  if (
    seconds !== null &&
    (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 0 || seconds > 3_600)
  )
    throw new Error("pendingRateLimit.retryAfterSeconds must be null or an integer from 0 to 3600");
  return { retryAfterSeconds: seconds as number | null };
}

/** Whether one HTTP body (not a batch) reads the pending view: eth_getLogs up to "pending", or the "pending" block. */
export function isPendingRead(body: string): boolean {
  let request: { method?: unknown; params?: unknown };
  try {
    request = JSON.parse(body) as typeof request;
  } catch {
    return false;
  }
  if (Array.isArray(request) || !Array.isArray(request.params)) return false;
  const first: unknown = request.params[0];
  if (request.method === "eth_getLogs")
    return (
      typeof first === "object" &&
      first !== null &&
      (first as { toBlock?: unknown }).toBlock === "pending"
    );
  return request.method === "eth_getBlockByNumber" && first === "pending";
}

/** The 429 a rate-limited pending read gets, or undefined. Note: the JSON-RPC body is proxyd's (-32016 "over rate limit"). */
export function pendingRateLimitAnswer(
  faults: Faults,
): { headers: Record<string, string>; body: string } | undefined {
  const limit = faults.pendingRateLimit;
  if (limit === undefined) return undefined;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (limit.retryAfterSeconds !== null) headers["retry-after"] = String(limit.retryAfterSeconds);
  return {
    headers,
    body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32016,"message":"over rate limit"}}',
  };
}
