import type { Address, Hex } from "viem";
import type { Order, OrderState } from "./orderStates.js";

/**
 * The cancel relay's side of the store (schema 15). The interface spec's rule: the order state is
 * changed atomically before a cancellation is accepted. `begin` moves the order holding the
 * authorization to `canceling` in one write transaction that reads it under the write lock, so a
 * capture or settle racing it either started first (the cancel is refused) or finds `canceling`
 * (the capture is refused).
 */
export type CancelStore = {
  /**
   * Moves the order holding this authorization (addresses and nonce compared lower-case) to
   * `canceling`; `undefined` when no order holds it. An order capturing, captured or canceled is
   * refused (OrderStateError), nothing changed. An order already `canceling` (a cancel run again,
   * say after one was killed before it sent) is returned as it is, with the state it came from.
   */
  begin: (
    token: Address,
    authorizer: Address,
    nonce: Hex,
    now: number,
  ) => Promise<{ order: Order; previous: OrderState } | undefined>;
  /**
   * The cancel was refused or reverted: the order goes back from `canceling` to the state it came
   * from, `cause` recorded on the transition. An order no longer canceling (the chain moved it) is
   * returned as it is.
   */
  fail: (orderId: number, cause: string, now: number) => Promise<Order>;
};

/** The states a cancel may start from: the relay's capture may be in flight from `capturing`. */
export const CANCELABLE_STATES: readonly OrderState[] = [
  "authorized",
  "voided_offchain",
  "expired",
];
