/**
 * The `invalidReason` (verify) and `errorReason` (settle) names a refusal carries. The generic ones
 * are the specification's (x402-specification-v2.md §9); the exact-scheme ones are the strings
 * @x402/evm 2.27's facilitator returns for the same case (src/exact/facilitator/errors.ts), so a
 * resource server written against the reference reads the same names from flashindex.
 */
export const INVALID_REASONS = {
  // Specification §9.
  invalidX402Version: "invalid_x402_version",
  invalidPayload: "invalid_payload",
  invalidPaymentRequirements: "invalid_payment_requirements",
  unsupportedScheme: "unsupported_scheme",
  invalidNetwork: "invalid_network",
  insufficientFunds: "insufficient_funds",
  invalidTransactionState: "invalid_transaction_state",
  unexpectedVerifyError: "unexpected_verify_error",
  unexpectedSettleError: "unexpected_settle_error",
  // @x402/evm's exact facilitator.
  schemeMismatch: "invalid_exact_evm_scheme",
  networkMismatch: "invalid_exact_evm_network_mismatch",
  missingEip712Domain: "invalid_exact_evm_missing_eip712_domain",
  unsupportedPayloadType: "unsupported_payload_type",
  recipientMismatch: "invalid_exact_evm_recipient_mismatch",
  invalidSignature: "invalid_exact_evm_signature",
  validBeforeExpired: "invalid_exact_evm_payload_authorization_valid_before",
  validAfterInFuture: "invalid_exact_evm_payload_authorization_valid_after",
  valueMismatch: "invalid_exact_evm_payload_authorization_value_mismatch",
  // x402 v1's exact scheme (ExactEvmSchemeV1) names a value other than maxAmountRequired so.
  authorizationValueV1Mismatch: "invalid_exact_evm_authorization_value",
  // An amount under the facilitator's floor (facilitator.minAmount). The reference has no floor;
  // this is its name for an authorization value it will not settle (@x402/evm 2.27
  // src/exact/facilitator/errors.ts ErrInvalidAuthorizationValue).
  belowMinAmount: "invalid_exact_evm_authorization_value",
  tokenNameMismatch: "invalid_exact_evm_token_name_mismatch",
  tokenVersionMismatch: "invalid_exact_evm_token_version_mismatch",
  eip3009NotSupported: "invalid_exact_evm_eip3009_not_supported",
  nonceAlreadyUsed: "invalid_exact_evm_nonce_already_used",
  insufficientBalance: "invalid_exact_evm_insufficient_balance",
  simulationFailed: "invalid_exact_evm_transaction_simulation_failed",
  // The settlement's receipt says reverted (status 0), or the send itself was refused.
  transactionFailed: "invalid_exact_evm_transaction_failed",
  // A successful receipt without the Transfer(from, to, value) of the authorization on the token.
  transferEventMismatch: "invalid_exact_evm_transfer_event_mismatch",
  // The signature could not be read as ECDSA, ERC-1271 bytes or an ERC-6492 wrapper.
  failedToParseSignature: "invalid_exact_evm_failed_to_parse_signature",
  undeployedSmartWallet: "invalid_exact_evm_payload_undeployed_smart_wallet",
  factoryNotAllowed: "eip6492_factory_not_allowed",
  assetNotContract: "asset_not_deployed_contract",
  // @x402/evm's settle helpers (ErrSettlementPending): sent, not yet seen within the wait; `transaction` carries the hash.
  settlementPending: "settlement_pending",
  // payment-identifier extension: the same id with another payload (answered with HTTP 409).
  paymentIdentifierConflict: "payment_identifier_conflict",
} as const;

export type InvalidReason = (typeof INVALID_REASONS)[keyof typeof INVALID_REASONS];

/** A refusal: the wire name and one line saying what exactly was wrong, for `invalidMessage`. */
export type Refusal = { invalidReason: InvalidReason; message: string };

/** A refusal of `reason` with `message`. */
export function refuse(invalidReason: InvalidReason, message: string): Refusal {
  return { invalidReason, message };
}
