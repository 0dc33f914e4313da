import type { Address, Hex } from "viem";
import { INVALID_REASONS, type InvalidReason, type Refusal } from "./invalidReasons.js";
import type { SettleResponse, VerifyResponse } from "./wire.js";

/**
 * The bodies and HTTP statuses of /verify and /settle answers. A refusal is an answer, not an HTTP
 * error: like the reference facilitator, it goes out with 200 and `isValid: false` /
 * `success: false`, which HTTPFacilitatorClient parses as a result. Only the payment-identifier
 * conflict has its own status (409, as that extension specifies), and a body that is not even
 * JSON gets 400; HTTPFacilitatorClient turns both into VerifyError / SettleError from the body.
 */

/** HTTP statuses of the answers: a result (refusals included), a body that is not JSON, a payment-identifier conflict. */
export const ANSWER_STATUS = { ok: 200, notJson: 400, conflict: 409 } as const;

/** The HTTP status a refusal goes out with. */
export function refusalStatus(refusal: Refusal): number {
  return refusal.invalidReason === INVALID_REASONS.paymentIdentifierConflict
    ? ANSWER_STATUS.conflict
    : ANSWER_STATUS.ok;
}

/** /verify's body for a payment that will settle. */
export function verifyAccepted(payer: Address): VerifyResponse {
  return { isValid: true, payer };
}

/** /verify's body for a refused payment; `payer` when the authorization named one. */
export function verifyRefused(refusal: Refusal, payer?: Address): VerifyResponse {
  return {
    isValid: false,
    invalidReason: refusal.invalidReason,
    invalidMessage: refusal.message,
    ...(payer === undefined ? {} : { payer }),
  };
}

/** /settle's body for a settled payment: its transaction on `network` (CAIP-2) and the amount moved. */
export function settleSucceeded(settled: {
  transaction: Hex;
  network: string;
  payer: Address;
  amount: bigint;
  extensions?: Record<string, unknown>;
}): SettleResponse {
  return {
    success: true,
    payer: settled.payer,
    transaction: settled.transaction,
    network: settled.network,
    amount: settled.amount.toString(),
    ...(settled.extensions === undefined ? {} : { extensions: settled.extensions }),
  };
}

/**
 * /settle's body for a payment whose transaction was sent but not seen pre-confirmed (or
 * confirmed) within facilitator.settleTimeoutMs: `success: false`, errorReason
 * `settlement_pending` and the sent hash in `transaction`. The specification's §5.3.2 table
 * says `transaction` is empty when settlement failed; the reference packages (@x402/evm 2.27,
 * settlementPendingResponse) answer a receipt wait that timed out after the broadcast exactly
 * so, and a resource server finds the hash where it finds it on success. The payment is stored
 * and driven: a repeated /settle answers with the same transaction and sends nothing.
 */
export function settlePending(pending: {
  transaction: Hex;
  network: string;
  payer: Address;
  message: string;
}): SettleResponse {
  return {
    success: false,
    errorReason: INVALID_REASONS.settlementPending,
    errorMessage: pending.message,
    transaction: pending.transaction,
    network: pending.network,
    payer: pending.payer,
  };
}

/** /settle's body for a refused or failed payment: no transaction (the spec's empty string). */
export function settleRefused(refusal: Refusal, network: string, payer?: Address): SettleResponse {
  return {
    success: false,
    errorReason: refusal.invalidReason,
    errorMessage: refusal.message,
    transaction: "",
    network,
    ...(payer === undefined ? {} : { payer }),
  };
}

/**
 * The one line a buyer reads for each reason, whatever the refusal's own message said. A message
 * built inside the facilitator may quote a node (a revert string, an RPC error naming the endpoint's
 * host, the relayer's balance) or an internal id (an order); those belong to the operator's log.
 * Fixed lines per reason make the set of texts a buyer can ever see finite and reviewable here.
 */
const BUYER_LINES: Record<InvalidReason, string> = {
  invalid_x402_version: "The x402 version is not one this facilitator speaks (1 or 2).",
  invalid_payload: "The payment payload is malformed.",
  invalid_payment_requirements:
    "The payment requirements are malformed or not settled by this facilitator.",
  unsupported_scheme: "Only the exact scheme is settled here.",
  invalid_network: "The network is not the one this facilitator settles on.",
  insufficient_funds: "The payer's balance is below the amount.",
  invalid_transaction_state: "The transaction is not in a state that allows this.",
  unexpected_verify_error: "The payment could not be verified because of an internal error.",
  unexpected_settle_error: "The payment could not be settled because of an internal error.",
  invalid_exact_evm_scheme: "The payment payload names another scheme than the requirements.",
  invalid_exact_evm_network_mismatch:
    "The payment payload names another network than the requirements.",
  invalid_exact_evm_missing_eip712_domain:
    "The requirements lack the token's EIP-712 name and version in extra.",
  unsupported_payload_type: "Only EIP-3009 authorizations are settled here.",
  invalid_exact_evm_recipient_mismatch: "The authorization pays another address than payTo.",
  invalid_exact_evm_signature: "The signature does not authorize this transfer for the payer.",
  invalid_exact_evm_payload_authorization_valid_before:
    "The authorization expires too soon (validBefore).",
  invalid_exact_evm_payload_authorization_valid_after:
    "The authorization is not valid yet (validAfter).",
  invalid_exact_evm_payload_authorization_value_mismatch:
    "The authorization's value is not the required amount.",
  invalid_exact_evm_authorization_value: "The authorization's value is not maxAmountRequired.",
  invalid_exact_evm_token_name_mismatch: "extra.name is not the token's EIP-712 name.",
  invalid_exact_evm_token_version_mismatch: "extra.version is not the token's EIP-712 version.",
  invalid_exact_evm_eip3009_not_supported: "The asset does not support EIP-3009.",
  invalid_exact_evm_nonce_already_used: "The authorization's nonce is already used or canceled.",
  invalid_exact_evm_insufficient_balance: "The payer's balance is below the amount.",
  invalid_exact_evm_transaction_simulation_failed: "The token would refuse the transfer.",
  invalid_exact_evm_transaction_failed: "The settlement transaction failed on chain.",
  invalid_exact_evm_transfer_event_mismatch:
    "The settlement transaction did not make the authorized transfer.",
  invalid_exact_evm_failed_to_parse_signature: "The signature could not be parsed.",
  invalid_exact_evm_payload_undeployed_smart_wallet:
    "The payer is a smart wallet that is not deployed.",
  eip6492_factory_not_allowed: "The smart wallet's deployment factory is not allowed here.",
  asset_not_deployed_contract: "The asset is not a deployed contract.",
  settlement_pending:
    "The settlement was sent and is not confirmed yet; settle again to learn its outcome.",
  payment_identifier_conflict:
    "This payment identifier was already used with another payment payload.",
};

/** What a buyer reads for a reason the table does not know (a bug, but never a leak). */
const UNKNOWN_REASON_LINE = "The payment was refused.";

/**
 * The buyer's line for `reason`. An unexpected error also names `requestId`, the id under which
 * the operator's log keeps what happened (and the X-Request-Id header of the answer).
 */
export function buyerLine(reason: string, requestId: string): string {
  const line = Object.hasOwn(BUYER_LINES, reason)
    ? BUYER_LINES[reason as InvalidReason]
    : UNKNOWN_REASON_LINE;
  const { unexpectedVerifyError, unexpectedSettleError } = INVALID_REASONS;
  if (reason !== unexpectedVerifyError && reason !== unexpectedSettleError) return line;
  return `${line} The operator can look it up as request ${requestId}.`;
}

/** A /verify body as it goes out on the wire: `invalidMessage` replaced by the buyer's line. */
export function verifyForBuyer(body: VerifyResponse, requestId: string): VerifyResponse {
  if (body.isValid)
    return body.payer === undefined ? { isValid: true } : { isValid: true, payer: body.payer };
  return {
    ...body,
    invalidMessage: buyerLine(body.invalidReason ?? UNKNOWN_REASON_LINE, requestId),
  };
}

/**
 * A /settle body as it goes out on the wire: `errorMessage` replaced by the buyer's line, and
 * `network` as the request named it (`network`, see echoedNetwork) on every refusal, as the
 * reference answers `payload.accepted.network` (v1: `payload.network`). A success keeps the
 * facilitator's network unless the request named the same chain another way (v1's `base`).
 */
export function settleForBuyer(
  body: SettleResponse,
  requestId: string,
  network: { named: string | undefined; sameChain: boolean },
): SettleResponse {
  const { named, sameChain } = network;
  const echoed = named !== undefined && (!body.success || sameChain) ? named : body.network;
  if (body.success) return { ...body, network: echoed };
  const errorMessage = buyerLine(body.errorReason ?? UNKNOWN_REASON_LINE, requestId);
  return { ...body, network: echoed, errorMessage };
}
