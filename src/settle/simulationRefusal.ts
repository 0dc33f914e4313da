import { INVALID_REASONS as R, refuse, type Refusal } from "./invalidReasons.js";

/**
 * The refusal of a payment whose `eth_call` simulation of transferWithAuthorization reverted,
 * named as @x402/evm 2.27's facilitator names it (diagnoseEip3009SimulationFailure): the facts it
 * reads first (the nonce's authorizationState, the payer's balance), then the token's own revert
 * reason, which FiatToken v2.2 (USDC) and the devnet's FlashTestToken word alike.
 */

/** FiatToken v2.2's revert reasons (the devnet's token copies them) and the refusal each means. */
const TOKEN_REVERTS: ReadonlyArray<[RegExp, Refusal["invalidReason"]]> = [
  [/authorization is used or canceled/, R.nonceAlreadyUsed],
  [/transfer amount exceeds balance/, R.insufficientBalance],
  [/authorization is expired/, R.validBeforeExpired],
  [/authorization is not yet valid/, R.validAfterInFuture],
  // "FiatTokenV2: invalid signature" (ERC-1271 or a wrong signer) and ECRecover's length, s and v checks.
  [/invalid signature/, R.invalidSignature],
];

/** What is known of a failed simulation; the facts are undefined when they were not read. */
export type FailedSimulation = {
  /** The revert reason the token gave, decoded from Error(string); undefined without one. */
  revertReason: string | undefined;
  /** authorizationState(from, nonce): true once used or canceled. */
  authorizationUsed?: boolean | undefined;
  /** balanceOf(from) in atomic units. */
  balance?: bigint | undefined;
};

/** The refusal for `failure` of a payment of `amount`; `simulation_failed` with the reason when nothing more specific fits. */
export function refusalOfFailedSimulation(failure: FailedSimulation, amount: bigint): Refusal {
  const said =
    failure.revertReason === undefined ? "without a reason" : `with "${failure.revertReason}"`;
  if (failure.authorizationUsed === true)
    return refuse(
      R.nonceAlreadyUsed,
      `the authorization's nonce is already used or canceled (the token reverted ${said})`,
    );
  if (failure.balance !== undefined && failure.balance < amount)
    return refuse(
      R.insufficientBalance,
      `the payer holds ${failure.balance}, less than ${amount} (the token reverted ${said})`,
    );
  if (failure.revertReason !== undefined) {
    for (const [pattern, reason] of TOKEN_REVERTS)
      if (pattern.test(failure.revertReason)) return refuse(reason, `the token reverted ${said}`);
  }
  return refuse(R.simulationFailed, `the token reverted ${said}`);
}
