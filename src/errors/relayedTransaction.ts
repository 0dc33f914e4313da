import type { Hex } from "viem";
import { RetryableError, type BaseErrorOptions } from "./base.js";

/**
 * A relayed transaction (a cancel, a capture) was sent but not seen as asked within the wait: it
 * may still land, so it is temporary (exit 75) and names its hash for the one who checks or retries.
 */
export class TransactionWaitTimeoutError extends RetryableError {
  override name = "TransactionWaitTimeoutError";
  readonly txHash: Hex;
  constructor(shortMessage: string, txHash: Hex, options: BaseErrorOptions = {}) {
    super(shortMessage, options);
    this.txHash = txHash;
  }
}
