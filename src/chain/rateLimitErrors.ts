import { MAX_RETRY_AFTER_MS } from "../ops/withRetry.js";

/**
 * How RPC providers say "too many requests" in a JSON-RPC error (with HTTP 200 or 429). A rate limit
 * is not a failure of the request: the client slows down and asks again, and it never counts
 * against the attempt budget (rpcClient.ts). Range and size refusals are parsed first
 * (rangeErrors.ts): some providers share a code between the two (Infura's -32005).
 */

/** Error codes that mean a rate limit whatever the text. */
const RATE_LIMIT_CODES: ReadonlySet<number> = new Set([
  // Note: Optimism's proxyd (in front of mainnet.base.org), ErrOverRateLimit -32016 "over rate limit" and
  // ErrOverSenderRateLimit -32017 "sender is over rate limit", both sent with HTTP 429.
  -32016,
  -32017,
  // Note: Alchemy, code 429 "Your app has exceeded its compute units per second capacity"; Helius-style gateways send 429 too.
  429,
  // Note: QuickNode, -32007 "request limit reached" (per second or per month on the plan).
  -32007,
]);

/** Texts that mean a rate limit under a generic code (-32000, -32005, -32603). */
const RATE_LIMIT_TEXT =
  // Note: Infura -32005 "daily request count exceeded, request rate limited" and "project ID request rate exceeded";
  // Ankr and BlastAPI "Too Many Requests"; Chainstack "rate limit exceeded"; DRPC "Too many request, try again later";
  // Alchemy "exceeded its compute units per second capacity"; Cloudflare "Rate limited".
  /\brate[- ]?limit|too many requests?\b|request rate exceeded|over rate limit|compute units per second|request limit reached/i;

/** Whether a node's JSON-RPC error is a provider's rate limit. */
export function isRateLimitAnswer(error: { code: number; message: string }): boolean {
  return RATE_LIMIT_CODES.has(error.code) || RATE_LIMIT_TEXT.test(error.message);
}

/**
 * The wait (ms) a rate-limit error body names, if any. Note: Infura answers -32005 with
 * `data: { current_rps, allowed_rps, backoff_seconds }` (docs.infura.io, "Avoid rate limiting");
 * some gateways nest the same under `data.rate`. Capped like a `Retry-After` header.
 */
export function rateLimitWaitMs(data: unknown): number | undefined {
  const seconds =
    backoffSecondsOf(data) ?? backoffSecondsOf(isObject(data) ? data.rate : undefined);
  return seconds === undefined
    ? undefined
    : Math.min(MAX_RETRY_AFTER_MS, Math.round(seconds * 1_000));
}

function backoffSecondsOf(data: unknown): number | undefined {
  if (!isObject(data)) return undefined;
  const value =
    typeof data.backoff_seconds === "string" ? Number(data.backoff_seconds) : data.backoff_seconds;
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
