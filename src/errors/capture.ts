import type { Hex } from "viem";
import { BaseError, RetryableError, UsageError, type BaseErrorOptions } from "./base.js";
import { TransactionWaitTimeoutError } from "./relayedTransaction.js";
import { EXIT_RELAYER_FUNDS, EXIT_REVERTED } from "./cancel.js";

/** The exit-code table of `flashindex order capture` (the codes cancel uses for the same failures). */
export const CAPTURE_EXIT_CODES_HELP = `Exit codes:
  0   sent (or already sent) and seen as asked: pre-confirmed, or --confirmations canonical blocks
  1   unknown order, or one whose state does not allow a capture (voided, canceled, expired, captured)
  2   bad option, config or key; a receive-kind order with a relayer key that is not the payee's
  8   the token refused it: the simulation reverted (its reason is printed; nothing sent), or
      the sent transaction reverted or moved other money than the order's (the order goes back
      to authorized with cause capture_reverted while its authorization is unused)
  9   the relayer lacks the ETH for gas (nothing sent; the order stays authorized)
  75  temporary: the RPC is unreachable, or the wait timed out (the transaction is stored and
      may still land: run the same command again, it never sends a second one)`;

/** The token would refuse the capture (the simulation or the mined transaction reverted): its reason. */
export class CaptureRevertedError extends BaseError {
  override name = "CaptureRevertedError";
  override readonly exitCode = EXIT_REVERTED;
  /** The token's Error(string) reason, or the node's message. */
  readonly reason: string;
  readonly txHash: Hex | undefined;
  constructor(shortMessage: string, reason: string, txHash?: Hex, options: BaseErrorOptions = {}) {
    super(shortMessage, options);
    this.reason = reason;
    this.txHash = txHash;
  }
}

/** receiveWithAuthorization is accepted only from the payee: another relayer key cannot capture it. */
export class ReceivePayeeError extends UsageError {
  override name = "ReceivePayeeError";
}

/** The relayer cannot pay for the capture's gas; nothing was sent. */
export class CaptureFundsError extends BaseError {
  override name = "CaptureFundsError";
  override readonly exitCode = EXIT_RELAYER_FUNDS;
}

/** Sent (and stored), but not seen as asked within the wait. It may still land; a retry sends nothing new. */
export class CaptureTimeoutError extends TransactionWaitTimeoutError {
  override name = "CaptureTimeoutError";
}

/** The capture's nonce reservation was taken back before its intent was stored: nothing was sent. Run it again. */
export class NonceLapsedError extends RetryableError {
  override name = "NonceLapsedError";
}

/**
 * The capture's relayer nonce was consumed by a transaction that is not the capture's, and the
 * authorization is still unused: none of the capture's transactions can land any more. The intent
 * was abandoned (the order is back to authorized); a new capture signs it on a new nonce.
 */
export class CaptureNonceLostError extends RetryableError {
  override name = "CaptureNonceLostError";
}

/** An x402 intent was abandoned before its bytes were sent (crash rule, docs/x402.md): nothing was broadcast. */
export class CaptureNotSentError extends RetryableError {
  override name = "CaptureNotSentError";
}

/**
 * The capture's transaction succeeded but its receipt lacks this authorization's AuthorizationUsed
 * or this payment's Transfer (@x402/evm's `invalid_exact_evm_transfer_event_mismatch`): the chain
 * did not make the payment the order holds, whatever the status says.
 */
export class CaptureMismatchError extends BaseError {
  override name = "CaptureMismatchError";
  override readonly exitCode = EXIT_REVERTED;
  readonly txHash: Hex;
  constructor(shortMessage: string, txHash: Hex, options: BaseErrorOptions = {}) {
    super(shortMessage, options);
    this.txHash = txHash;
  }
}
