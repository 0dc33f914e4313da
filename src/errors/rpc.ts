import { BaseError, FatalError, RetryableError, type BaseErrorOptions } from "./base.js";

/** The answer was not what JSON-RPC or the method promises (bad JSON, bad hex, wrong shape). Retryable: another try or another endpoint may answer well. */
export class RpcResponseError extends RetryableError {
  override name = "RpcResponseError";
}

/** A transport failure: timeout, connection reset, HTTP 429 or 5xx. */
export class RpcTransportError extends RetryableError {
  override name = "RpcTransportError";
}

/**
 * The provider refused the request for its rate (HTTP 429, or a rate-limit error body): the client
 * slows down and asks again, for as long as it takes; never counted against the attempt budget.
 */
export class RateLimitedError extends RpcTransportError {
  override name = "RateLimitedError";
}

/**
 * A request the rate limiter let go that had not left yet when the provider refused another (the
 * decode thread sends a window's when it is free): it was not sent, since the provider is over its
 * limit, and is asked again through the limiter at once. Never counted against the attempt budget.
 */
export class HeldBackError extends RetryableError {
  override name = "HeldBackError";
}

/**
 * A batch refused for its rate: a provider that bills every call may refuse it for its size alone,
 * and asked again whole it could be refused forever. The caller sends it in the smaller pieces the
 * client now allows (chain/inBatches.ts). Not retried by the client.
 */
export class BatchOverRateError extends RetryableError {
  override name = "BatchOverRateError";
}

/** A JSON-RPC error object the node sent back. Whether to retry depends on its code and text. */
export class RpcRequestError extends BaseError {
  override name = "RpcRequestError";
  readonly code: number;
  readonly data: unknown;
  /** What it was constructed from: the error again from another thread's copy (`new RpcRequestError(method, nodeError)`). */
  readonly method: string;
  readonly nodeError: { code: number; message: string; data?: unknown };
  constructor(
    method: string,
    error: { code: number; message: string; data?: unknown },
    options: BaseErrorOptions = {},
  ) {
    super(`${method} failed: ${error.message} (code ${error.code})`, options);
    this.code = error.code;
    this.data = error.data;
    this.method = method;
    this.nodeError = { code: error.code, message: error.message, data: error.data };
  }
}

/** What a provider's range or size refusal says about the window it would accept (parsed in chain/rangeErrors.ts). */
export type RangeErrorHint =
  /** The provider proposes an explicit range (inclusive), usually starting at the refused `from`. */
  | { kind: "suggestedRange"; from: bigint; to: bigint }
  /** The provider states its block-range limit as a count of blocks. */
  | { kind: "maxRange"; blocks: bigint }
  /** Too many results for one answer; `results` is the stated limit. */
  | { kind: "maxResults"; results: number }
  /** Recognised as a range or size refusal, but no usable number was given. */
  | { kind: "tooLarge" };

/** The provider refused the block range or the size of the answer; the caller must split the window. */
export class RangeLimitError extends BaseError {
  override name = "RangeLimitError";
  readonly hint: RangeErrorHint;
  constructor(message: string, hint: RangeErrorHint, options: BaseErrorOptions = {}) {
    super(message, options);
    this.hint = hint;
  }
}

/** The endpoint serves another chain than the config names. */
export class WrongChainError extends FatalError {
  override name = "WrongChainError";
}

/** The node pruned the history asked for (EIP-4444): no retry helps; only an archive endpoint does. */
export class PrunedHistoryError extends FatalError {
  override name = "PrunedHistoryError";
}

/** EIP-4444: the node no longer serves this history. */
export const PRUNED_HISTORY_CODE = 4444;

/**
 * An answer that parsed but failed validation (a log outside the filter or undecodable): the whole
 * answer is untrustworthy, so it is retried (next endpoint first), never partly stored.
 */
export class DamagedAnswerError extends RpcResponseError {
  override name = "DamagedAnswerError";
}

// JSON-RPC 2.0 and EIP-1474 codes that no retry can fix.
/** geth, reth and anvil: the call or estimate reverted (the revert data in `data`); the same again reverts again. */
export const EXECUTION_REVERTED_CODE = 3;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INVALID_REQUEST = -32600;
const METHOD_NOT_SUPPORTED = -32004;

/**
 * Whether a node's error to eth_call or eth_estimateGas is the call's revert (code 3 with the
 * revert data, or geth's -32000 "execution reverted" without data), not a failure of the node.
 */
export function isExecutionReverted(error: RpcRequestError): boolean {
  return (
    error.code === EXECUTION_REVERTED_CODE ||
    /^execution reverted/i.test(error.shortMessage.replace(/^\S+ failed: /, ""))
  );
}

/** What nodes answer eth_sendRawTransaction when they refuse or already hold the transaction. */
const SEND_VERDICT =
  /already known|known transaction|already imported|nonce too low|nonce has already been used|underpriced|insufficient funds/i;

/** Whether a node's JSON-RPC error is worth another try (rate limits, overloaded or lagging nodes). */
export function isRetryableRpcError(error: RpcRequestError): boolean {
  if (
    [
      EXECUTION_REVERTED_CODE,
      METHOD_NOT_FOUND,
      INVALID_PARAMS,
      INVALID_REQUEST,
      METHOD_NOT_SUPPORTED,
      PRUNED_HISTORY_CODE,
    ].includes(error.code)
  )
    return false;
  // Note: geth answers a revert without data as -32000 "execution reverted"; retrying cannot change it.
  if (/^execution reverted/i.test(error.shortMessage.replace(/^\S+ failed: /, ""))) return false;
  // Note: a node's verdict on a sent transaction (geth/reth -32000 "already known", "nonce too low",
  // "replacement transaction underpriced", "insufficient funds"; anvil -32003 "transaction already
  // imported") is the same for the same bytes a second later: the relay reads it and decides, where
  // seconds of retries held a settlement's answer back.
  if (SEND_VERDICT.test(error.shortMessage)) return false;
  // -32000 "header not found", -32005 limit exceeded, -32603 internal error, 429-like texts, and proxyd's
  // -32011 "no backend is currently healthy to serve traffic" (HTTP 503): transient.
  return true;
}

/** A Flashblocks notification that only carries transaction hashes: the subscription must be asked for full transactions. */
export class HashesOnlyError extends RpcResponseError {
  override name = "HashesOnlyError";
}
