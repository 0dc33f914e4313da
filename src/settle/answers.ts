import type { Address, Hex } from "viem";
import { INVALID_REASONS, type Refusal } from "./invalidReasons.js";
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
  return refusal.invalidReason === INVALID_REASONS.paymentIdentifierConflict ? ANSWER_STATUS.conflict : ANSWER_STATUS.ok;
}

/** /verify's body for a payment that will settle. */
export function verifyAccepted(payer: Address): VerifyResponse {
  return { isValid: true, payer };
}

/** /verify's body for a refused payment; `payer` when the authorization named one. */
export function verifyRefused(refusal: Refusal, payer?: Address): VerifyResponse {
  return { isValid: false, invalidReason: refusal.invalidReason, invalidMessage: refusal.message, ...(payer === undefined ? {} : { payer }) };
}

/** /settle's body for a settled payment: its transaction on `network` (CAIP-2) and the amount moved. */
export function settleSucceeded(settled: { transaction: Hex; network: string; payer: Address; amount: bigint; extensions?: Record<string, unknown> }): SettleResponse {
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
export function settlePending(pending: { transaction: Hex; network: string; payer: Address; message: string }): SettleResponse {
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
  return { success: false, errorReason: refusal.invalidReason, errorMessage: refusal.message, transaction: "", network, ...(payer === undefined ? {} : { payer }) };
}
