import { isEqual as isAddressEqual } from "ox/Address";
import type { Address } from "viem";
import { INVALID_REASONS as R, refuse, type Refusal } from "./invalidReasons.js";
import { evmNetwork, type ExactPaymentRequest } from "./wire.js";

/**
 * The checks of an exact EIP-3009 payment that need no chain: is it ours to settle (network, token,
 * payee), and do the authorization's fields say what the requirements ask (scheme_exact_evm.md,
 * and @x402/evm 2.27's verifyEIP3009 for the order and the names). The signature, the nonce's
 * state, the balance and the simulation come after, from the chain.
 */

/**
 * The reference's margin: an authorization must stay valid this long after verify, time for the
 * settle transaction to reach a block (FiatToken requires block.timestamp < validBefore).
 */
export const VALID_BEFORE_MARGIN_SECONDS = 6n;

/** A token this facilitator settles, with its EIP-712 domain as read from the contract. */
export type FacilitatorToken = { address: Address; name: string; version: string };

/** What the operator allows: the chain, the tokens, the payees (empty: any payee), and each token's smallest amount. */
export type ExactPolicy = {
  chainId: number;
  tokens: readonly FacilitatorToken[];
  payTo: readonly Address[];
  /** Lower-case token address → the smallest amount settled, in the token's base units; absent: no floor. */
  minAmounts?: ReadonlyMap<string, bigint> | undefined;
};

/**
 * The first reason `request` cannot be settled under `policy` at `nowSeconds` (unix), or undefined.
 * Order: what is ours to settle first (network, asset and its domain, payee), then the fields as
 * the reference orders them (recipient, validBefore, validAfter, value).
 */
export function checkExactFields(
  request: ExactPaymentRequest,
  policy: ExactPolicy,
  nowSeconds: bigint,
): Refusal | undefined {
  const { requirements, authorization } = request;
  if (requirements.chainId !== policy.chainId)
    return refuse(
      R.invalidNetwork,
      `network ${requirements.network} is not settled here (this facilitator settles on ${evmNetwork(policy.chainId)})`,
    );
  const token = policy.tokens.find((candidate) =>
    isAddressEqual(candidate.address, requirements.asset),
  );
  if (token === undefined)
    return refuse(
      R.invalidPaymentRequirements,
      `asset ${requirements.asset} is not a token this facilitator settles`,
    );
  // A domain other than the token's makes a signature the token will refuse: say why now, not
  // after a failed simulation.
  if (requirements.name !== token.name)
    return refuse(
      R.tokenNameMismatch,
      `extra.name ${JSON.stringify(requirements.name)} is not the token's EIP-712 name ${JSON.stringify(token.name)}`,
    );
  if (requirements.version !== token.version)
    return refuse(
      R.tokenVersionMismatch,
      `extra.version ${JSON.stringify(requirements.version)} is not the token's EIP-712 version ${JSON.stringify(token.version)}`,
    );
  if (
    policy.payTo.length > 0 &&
    !policy.payTo.some((payee) => isAddressEqual(payee, requirements.payTo))
  )
    return refuse(
      R.invalidPaymentRequirements,
      `payTo ${requirements.payTo} is not a payee this facilitator settles for`,
    );
  if (!isAddressEqual(authorization.to, requirements.payTo))
    return refuse(
      R.recipientMismatch,
      `authorization.to ${authorization.to} is not payTo ${requirements.payTo}`,
    );
  if (authorization.validBefore < nowSeconds + VALID_BEFORE_MARGIN_SECONDS)
    return refuse(
      R.validBeforeExpired,
      `authorization.validBefore ${authorization.validBefore} is before now (${nowSeconds}) + ${VALID_BEFORE_MARGIN_SECONDS} s`,
    );
  if (authorization.validAfter > nowSeconds)
    return refuse(
      R.validAfterInFuture,
      `authorization.validAfter ${authorization.validAfter} is after now (${nowSeconds})`,
    );
  // The reference names this differently in v1 (ExactEvmSchemeV1: ErrInvalidAuthorizationValue).
  if (authorization.value !== requirements.amount)
    return refuse(
      request.x402Version === 1 ? R.authorizationValueV1Mismatch : R.valueMismatch,
      `authorization.value ${authorization.value} is not the required amount ${requirements.amount}`,
    );
  // On Base a settle's gas can cost more than a payment of a few thousandths of a dollar carries.
  const floor = policy.minAmounts?.get(token.address.toLowerCase());
  if (floor !== undefined && authorization.value < floor)
    return refuse(
      R.belowMinAmount,
      `authorization.value ${authorization.value} is below this facilitator's minimum ${floor} for ${token.address} (facilitator.minAmount)`,
    );
  return undefined;
}
