import { parseTransaction, type LocalAccount } from "viem";
import type { CaptureIntent, Order } from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import type { CaptureTransactions, Fees } from "./captureTransactions.js";

/** A replacement's fees over the replaced one's, in percent: nodes refuse a replacement under +10% on either fee. */
const REPLACEMENT_FEE_BUMP_PERCENT = 25n;

/** The fees of a replacement: each fee bumped over the replaced one's, or today's when higher. */
export function bumpedFees(replaced: Fees, current: Fees): Fees {
  const bump = (value: bigint) => value + (value * REPLACEMENT_FEE_BUMP_PERCENT) / 100n + 1n;
  return {
    maxFeePerGas: max(current.maxFeePerGas, bump(replaced.maxFeePerGas)),
    maxPriorityFeePerGas: max(current.maxPriorityFeePerGas, bump(replaced.maxPriorityFeePerGas)),
  };
}

/**
 * Signs and stores a replacement for the intent: same calldata, gas and relayer nonce, higher
 * fees. Never another nonce: two nonces could both land, and the second reverts or (for a stale
 * view) is taken for the outcome. One nonce means at most one of the intent's transactions can
 * ever land. `account` must be the intent's relayer.
 */
export async function replaceCapture(
  deps: { store: Store; transactions: CaptureTransactions },
  account: LocalAccount,
  order: Order,
  capture: CaptureIntent,
): Promise<CaptureIntent> {
  const previous = parseTransaction(capture.rawTx);
  const fee = bumpedFees(capture, await deps.transactions.fees());
  const next = await deps.transactions.sign(
    account,
    order,
    previous.data!,
    previous.gas!,
    capture.relayerNonce,
    fee,
  );
  return deps.store.captures.replace(order.id, next, Date.now());
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
