import { RetryableError } from "../errors/base.js";
import {
  PRUNED_HISTORY_CODE,
  PrunedHistoryError,
  RangeLimitError,
  RateLimitedError,
  RpcRequestError,
  isRetryableRpcError,
} from "../errors/rpc.js";
import { parseRangeError } from "./rangeErrors.js";
import { isRateLimitAnswer, rateLimitWaitMs } from "./rateLimitErrors.js";

/** Maps a node's error to our vocabulary: range limits first, then rate limits, then retryable or fatal by code. */
export function classifyRpcError(
  method: string,
  error: unknown,
): Error & { shortMessage?: string } {
  if (error instanceof RpcRequestError) {
    const hint = parseRangeError({
      code: error.code,
      message: error.shortMessage,
      data: error.data,
    });
    if (hint !== undefined) return new RangeLimitError(error.shortMessage, hint, { cause: error });
    if (isRateLimitAnswer(error.nodeError))
      return new RateLimitedError(error.shortMessage, {
        cause: error,
        retryAfterMs: rateLimitWaitMs(error.data),
      });
    if (error.code === PRUNED_HISTORY_CODE)
      return new PrunedHistoryError(
        `${error.shortMessage}: the node pruned this history; put an archive endpoint in rpc.http`,
        { cause: error },
      );
    if (isRetryableRpcError(error)) return new RetryableError(error.shortMessage, { cause: error });
    return error;
  }
  if (error instanceof Error) return error;
  return new RetryableError(`${method} failed: ${String(error)}`);
}

/** The `outcome` label of flashindex_rpc_requests_total for a classified failure. */
export function outcomeOf(error: Error): string {
  if (error instanceof RangeLimitError) return "range_error";
  if (error instanceof RateLimitedError) return "rate_limited";
  if (error instanceof RetryableError) return "retryable";
  return "fatal";
}
