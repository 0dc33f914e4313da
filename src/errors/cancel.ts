import type { Hex } from "viem";
import { BaseError, type BaseErrorOptions } from "./base.js";
import { TransactionWaitTimeoutError } from "./relayedTransaction.js";
import { RpcTransportError } from "./rpc.js";

/**
 * Exit codes of `flashindex cancel`, one per failure so a script can branch on them.
 * 0 canceled (or dry run passed), 1 unexpected, 2 bad flags/config/keys (UsageError, ConfigError),
 * 75 temporary (receipt or confirmation timeout, RPC unreachable): see CANCEL_EXIT_CODES_HELP.
 */
export const EXIT_ALREADY_CAPTURED = 3;
export const EXIT_ALREADY_CANCELED = 4;
/** The nonce is used on chain but the indexed database cannot tell by what (not indexed, or no database). */
export const EXIT_ALREADY_USED = 5;
export const EXIT_BAD_SIGNATURE = 6;
export const EXIT_WRONG_SIGNER = 7;
export const EXIT_REVERTED = 8;
export const EXIT_RELAYER_FUNDS = 9;
export const EXIT_OUT_OF_GAS = 10;
/** Mined and confirmed, yet authorizationState is still false: the chain disagrees with the receipt. */
export const EXIT_NOT_APPLIED = 11;

/** The exit-code table as it appears in `flashindex cancel --help`. */
export const CANCEL_EXIT_CODES_HELP = `Exit codes:
  0   canceled (authorizationState is now true), or --dry-run found nothing in the way
  2   bad option, config or key (unreadable key file, malformed address, nonce or signature hex)
  3   already captured: the indexed database shows an AuthorizationUsed for this nonce
  4   already canceled: the indexed database shows an AuthorizationCanceled for this nonce
  5   already used or canceled on chain (the database cannot tell which)
  6   bad signature: the token would refuse it whoever signed (an authorizer without code needs
      exactly 65 bytes r ‖ s ‖ v, v 27/28 or 0/1, low s; it must recover)
  7   wrong signer: the buyer key or the signature's signer is not the authorizer, or the
      authorizer's wallet (ERC-1271 isValidSignature) refuses the signature (nothing sent)
  8   reverted: the simulation or the mined transaction reverted
  9   relayer lacks the ETH for gas (nothing sent)
  10  the transaction ran out of gas
  11  confirmed, yet authorizationState is still false
  75  temporary: timed out waiting for the receipt or confirmations, or the RPC is unreachable`;

class CancelError extends BaseError {
  override name = "CancelError";
}

export class AlreadyCapturedError extends CancelError {
  override name = "AlreadyCapturedError";
  override readonly exitCode = EXIT_ALREADY_CAPTURED;
}

export class AlreadyCanceledError extends CancelError {
  override name = "AlreadyCanceledError";
  override readonly exitCode = EXIT_ALREADY_CANCELED;
}

export class AlreadyUsedError extends CancelError {
  override name = "AlreadyUsedError";
  override readonly exitCode = EXIT_ALREADY_USED;
}

/**
 * A signature the token would refuse whoever signed it: not 65 bytes for an authorizer without code,
 * v not 27/28 (0/1 are mapped onto them), s in the upper half, or not recoverable. The one definition,
 * for `cancel` and `order add` alike.
 */
export class BadSignatureError extends BaseError {
  override name = "BadSignatureError";
  override readonly exitCode = EXIT_BAD_SIGNATURE;
}

/**
 * The signature is well formed but not the authorizer's: ECDSA recovers another address, or the
 * authorizer's code (ERC-1271) does not return the magic value. The one definition, for `cancel` and `order add`.
 */
export class WrongSignerError extends BaseError {
  override name = "WrongSignerError";
  override readonly exitCode = EXIT_WRONG_SIGNER;
}

export class CancelRevertedError extends CancelError {
  override name = "CancelRevertedError";
  override readonly exitCode = EXIT_REVERTED;
  readonly txHash: Hex | undefined;
  constructor(shortMessage: string, txHash: Hex | undefined, options: BaseErrorOptions = {}) {
    super(shortMessage, options);
    this.txHash = txHash;
  }
}

export class RelayerFundsError extends CancelError {
  override name = "RelayerFundsError";
  override readonly exitCode = EXIT_RELAYER_FUNDS;
}

export class OutOfGasError extends CancelError {
  override name = "OutOfGasError";
  override readonly exitCode = EXIT_OUT_OF_GAS;
}

export class CancelNotAppliedError extends CancelError {
  override name = "CancelNotAppliedError";
  override readonly exitCode = EXIT_NOT_APPLIED;
}

/** Sent, but no receipt with enough confirmations in time. The transaction may still land: check before retrying. */
export class CancelTimeoutError extends TransactionWaitTimeoutError {
  override name = "CancelTimeoutError";
}

/**
 * An RpcTransportError whose message names the relay's step (exit 75); a nested step keeps the inner
 * name. Its `name` stays RpcTransportError's: to a user it is that failure, named by its step.
 */
export class RpcStepError extends RpcTransportError {}
