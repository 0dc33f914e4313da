import { pad, type Address, type Hex } from "viem";
import type { TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../rows/paymentEvents.js";

/** What a capture's receipt says the chain did: the transfer, a revert, or something else. */
export type CaptureVerdict =
  | { kind: "paid" }
  | { kind: "reverted" }
  /** Succeeded, but without this authorization's AuthorizationUsed or this payment's Transfer. */
  | { kind: "mismatch"; missing: string };

/** The authorization a receipt must show: the token, payer (authorizer), payee, amount and nonce. */
export type ExpectedCapture = {
  token: Address;
  authorizer: Address;
  payee: Address;
  value: bigint;
  nonce: Hex;
};

/**
 * Judges a capture's receipt (pre-confirmed or sealed) as @x402/evm 2.27's exact facilitator does
 * (settleEIP3009: status, then verifyEip3009TransferEvent), and stricter: a success needs both the
 * token's `AuthorizationUsed(authorizer, nonce)` and its `Transfer(payer, payee, value)`. FiatToken
 * v2.2 emits both from transferWithAuthorization / receiveWithAuthorization; a successful receipt
 * without them moved someone else's money, or none (a token whose transfer is a no-op).
 */
export function judgeCaptureReceipt(
  receipt: TransactionReceiptSummary,
  expected: ExpectedCapture,
): CaptureVerdict {
  if (receipt.status === "reverted") return { kind: "reverted" };
  const token = expected.token.toLowerCase();
  const fromToken = receipt.logs.filter((log) => log.address === token);
  const word = (address: Address) => pad(address.toLowerCase() as Hex, { size: 32 });
  const used = fromToken.some(
    (log) =>
      log.topics.length === 3 &&
      log.topics[0] === AUTHORIZATION_USED_TOPIC &&
      log.topics[1] === word(expected.authorizer) &&
      log.topics[2] === expected.nonce.toLowerCase(),
  );
  if (!used)
    return {
      kind: "mismatch",
      missing: `AuthorizationUsed(${expected.authorizer}, ${expected.nonce})`,
    };
  const transferred = fromToken.some(
    (log) =>
      log.topics.length === 3 &&
      log.topics[0] === TRANSFER_TOPIC &&
      log.topics[1] === word(expected.authorizer) &&
      log.topics[2] === word(expected.payee) &&
      log.data.length === 66 &&
      BigInt(log.data) === expected.value,
  );
  if (!transferred)
    return {
      kind: "mismatch",
      missing: `Transfer(${expected.authorizer}, ${expected.payee}, ${expected.value})`,
    };
  return { kind: "paid" };
}
