import { BatchOverRateError, type RateLimitedError } from "../errors/rpc.js";
import { createBatchSize } from "./batchSize.js";
import { callsPerBatch } from "./rateLimiter.js";
import type { RpcPacing } from "./rpcPacing.js";

export type BatchPolicy = {
  /**
   * Most calls one batch should carry now: what the rate limiter allows in one second (every call
   * is billed), and less than a batch the provider refused.
   */
  calls: () => number;
  /** A batch of `cost` calls was answered: the size may grow (batchSize.ts). */
  answered: (cost: number) => void;
  /**
   * A batch of `cost` calls was refused for the rate: the size shrinks; the error sends it back in
   * pieces.
   */
  refused: (cost: number, error: RateLimitedError) => BatchOverRateError;
};

/**
 * The client's batch sizing: the size learnt from refusals (batchSize.ts) within a second of the
 * current rate.
 */
export function createBatchPolicy(pacing: Pick<RpcPacing, "requestsPerSecond">): BatchPolicy {
  const size = createBatchSize();
  const calls = (): number => callsPerBatch(pacing.requestsPerSecond(), size.current());
  return {
    calls,
    answered: (cost) => size.answered(cost),
    refused: (cost, error) => {
      size.refused(cost);
      return new BatchOverRateError(
        `a batch of ${cost} calls was refused for the rate; sending it in pieces of ${calls()}: ${error.shortMessage}`,
        { cause: error },
      );
    },
  };
}
