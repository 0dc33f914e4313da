import type { Address, Hex } from "viem";

/**
 * Merchant orders: signed transfer authorizations held off chain, and their state.
 *
 * States: authorized (signature stored, nonce unused), voided_offchain (the merchant will never
 * submit it), capturing (flashindex's capture relay signed and stored a transaction for it, not yet
 * seen on chain; since schema 12), canceling (`flashindex cancel` accepted a cancel for it and may
 * have sent it; capture and settle refuse it; since schema 15), captured / canceled (a live AuthorizationUsed / AuthorizationCanceled event; its
 * lifecycle status is `eventStatus`), expired (validBefore passed with no live event).
 *
 * Off-chain transitions (add, void, expire) are made by the store, each in one transaction that
 * reads the current state under the write lock; on-chain transitions are made by the schema's
 * triggers inside the transaction that stores the event. The database itself refuses a state change
 * outside ORDER_TRANSITIONS (trigger `orders_refuse_illegal_transition`).
 */
export const ORDER_STATES = [
  "authorized",
  "voided_offchain",
  "capturing",
  "canceling",
  "captured",
  "canceled",
  "expired",
] as const;
export type OrderState = (typeof ORDER_STATES)[number];
export type OrderKind = "transfer" | "receive";
export type EventStatus = "preconfirmed" | "confirmed" | "finalized";

/** Who makes a transition: the merchant (CLI), the capture relay, the daemon's clock, or an indexed event. */
export type TransitionActor = "merchant" | "relay" | "expiry" | "chain";
/** Where an order came from: `order add`, or a payment the x402 facilitator settled. */
export type OrderSource = "merchant" | "x402";

/** Every allowed state change; anything else is refused. Same rows as table `order_state_transitions`. */
export const ORDER_TRANSITIONS: ReadonlyArray<{
  from: OrderState;
  to: OrderState;
  by: TransitionActor;
  when: string;
}> = [
  {
    from: "authorized",
    to: "voided_offchain",
    by: "merchant",
    when: "order void: the merchant will never submit the signature",
  },
  {
    from: "authorized",
    to: "capturing",
    by: "relay",
    when: "order capture / x402 settle: the signed transaction is stored with the intent, then sent",
  },
  {
    from: "capturing",
    to: "authorized",
    by: "relay",
    when: "the node refused the transaction for good (nothing of it can land): the intent is abandoned",
  },
  {
    from: "authorized",
    to: "canceling",
    by: "merchant",
    when: "flashindex cancel accepted the cancel, before anything is sent",
  },
  {
    from: "voided_offchain",
    to: "canceling",
    by: "merchant",
    when: "flashindex cancel accepted the cancel, before anything is sent",
  },
  {
    from: "expired",
    to: "canceling",
    by: "merchant",
    when: "flashindex cancel accepted the cancel (cancel works after expiry too)",
  },
  {
    from: "canceling",
    to: "authorized",
    by: "relay",
    when: "the cancel was refused or reverted: back to the state it came from, with the cause",
  },
  {
    from: "canceling",
    to: "voided_offchain",
    by: "relay",
    when: "the cancel was refused or reverted: back to the state it came from, with the cause",
  },
  {
    from: "canceling",
    to: "expired",
    by: "relay",
    when: "the cancel was refused or reverted: back to the state it came from, with the cause",
  },
  {
    from: "canceling",
    to: "expired",
    by: "expiry",
    when: "validBefore passed with no live event (a cancel killed before it was sent ends here)",
  },
  {
    from: "canceling",
    to: "canceled",
    by: "chain",
    when: "a live AuthorizationCanceled for the nonce (the cancel landed)",
  },
  {
    from: "canceling",
    to: "captured",
    by: "chain",
    when: "a live AuthorizationUsed: a capture landed before the cancel",
  },
  {
    from: "authorized",
    to: "expired",
    by: "expiry",
    when: "validBefore passed with no live event",
  },
  {
    from: "capturing",
    to: "expired",
    by: "expiry",
    when: "validBefore passed with no live event: the relay's transaction can no longer land",
  },
  {
    from: "voided_offchain",
    to: "expired",
    by: "expiry",
    when: "validBefore passed with no live event",
  },
  {
    from: "authorized",
    to: "captured",
    by: "chain",
    when: "a live AuthorizationUsed for the nonce",
  },
  {
    from: "voided_offchain",
    to: "captured",
    by: "chain",
    when: "a live AuthorizationUsed after a void: flagged voided_then_captured, logged at error level",
  },
  {
    from: "expired",
    to: "captured",
    by: "chain",
    when: "a live AuthorizationUsed in a block older than our clock's expiry",
  },
  {
    from: "capturing",
    to: "captured",
    by: "chain",
    when: "a live AuthorizationUsed for the nonce (the relay's transaction, or anyone's)",
  },
  {
    from: "authorized",
    to: "canceled",
    by: "chain",
    when: "a live AuthorizationCanceled for the nonce",
  },
  {
    from: "capturing",
    to: "canceled",
    by: "chain",
    when: "a live AuthorizationCanceled: the buyer canceled before the relay's transaction landed",
  },
  {
    from: "voided_offchain",
    to: "canceled",
    by: "chain",
    when: "a live AuthorizationCanceled for the nonce",
  },
  {
    from: "expired",
    to: "canceled",
    by: "chain",
    when: "a live AuthorizationCanceled (cancel works after expiry too)",
  },
  {
    from: "captured",
    to: "canceled",
    by: "chain",
    when: "a reorg replaced the capture by a cancel",
  },
  {
    from: "canceled",
    to: "captured",
    by: "chain",
    when: "a reorg replaced the cancel by a capture",
  },
  {
    from: "captured",
    to: "authorized",
    by: "chain",
    when: "the event was removed/dropped, no other live event, merchant had not voided",
  },
  {
    from: "captured",
    to: "voided_offchain",
    by: "chain",
    when: "the event was removed/dropped, no other live event, merchant had voided",
  },
  {
    from: "canceled",
    to: "authorized",
    by: "chain",
    when: "the event was removed/dropped, no other live event, merchant had not voided",
  },
  {
    from: "canceled",
    to: "voided_offchain",
    by: "chain",
    when: "the event was removed/dropped, no other live event, merchant had voided",
  },
  {
    from: "captured",
    to: "capturing",
    by: "chain",
    when: "the event was removed/dropped while the relay's intent is live: the relay sends it again",
  },
  {
    from: "canceled",
    to: "capturing",
    by: "chain",
    when: "the event was removed/dropped while the relay's intent is live: the relay sends it again",
  },
];

export type NewOrder = {
  chainId: number;
  token: Address;
  authorizer: Address;
  payee: Address;
  /** Token base units. */
  value: bigint;
  /** Unix seconds. */
  validAfter: number;
  /** Unix seconds. */
  validBefore: number;
  nonce: Hex;
  kind: OrderKind;
  /** As the token checks it: 65-byte r || s || v (v 27/28, low s) from an EOA, or a wallet's ERC-1271 signature of any length. */
  signature: Hex;
  /** Default merchant. */
  source?: OrderSource;
};

export type Order = Omit<NewOrder, "value" | "source"> & {
  id: number;
  source: OrderSource;
  /** Decimal string of token base units. */
  value: string;
  state: OrderState;
  offchainState: "authorized" | "voided_offchain";
  eventStatus: EventStatus | null;
  eventTxHash: Hex | null;
  voidedThenCaptured: boolean;
  /** Unix ms. */
  createdAt: number;
  updatedAt: number;
};

export type OrderTransition = {
  id: number;
  orderId: number;
  fromState: OrderState | null;
  toState: OrderState;
  eventStatus: EventStatus | null;
  /** added, voided, expired, captured, canceled, captured_after_void, event_<status>, event_removed */
  cause: string;
  txHash: Hex | null;
  /** Unix ms. */
  at: number;
};

export { OrderExistsError, OrderNotFoundError, OrderStateError } from "../errors/orders.js";
import { OrderStateError } from "../errors/orders.js";

/** Throws OrderStateError unless `from -> to` is in ORDER_TRANSITIONS for this actor. */
export function assertTransition(
  from: OrderState,
  to: OrderState,
  by: TransitionActor,
  id?: number,
): void {
  const mine = ORDER_TRANSITIONS.filter((t) => t.by === by && t.to === to);
  if (mine.some((t) => t.from === from)) return;
  const allowed = [...new Set(mine.map((t) => t.from))];
  throw new OrderStateError(
    `order${id === undefined ? "" : ` ${id}`} is ${from}: it cannot become ${to} (only from ${allowed.join(" or ") || "nowhere"}, by ${by})`,
  );
}

/**
 * What became of a capture intent: `sent` while its transaction may still land (the daemon re-sends
 * it), `landed` / `canceled` once the order's event is finalized, `expired` with the order, `abandoned`
 * when the node refused it for good and the order went back to authorized.
 */
export type CaptureStatus = "sent" | "landed" | "canceled" | "expired" | "abandoned";

/** A signed capture transaction: the exact bytes re-sent after a crash or a drop. Fees in wei. */
export type CaptureTransaction = {
  relayer: Address;
  relayerNonce: number;
  txHash: Hex;
  rawTx: Hex;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
};

/** The relay's intent for one order (table `order_captures`, schema 12). */
export type CaptureIntent = CaptureTransaction & {
  orderId: number;
  status: CaptureStatus;
  /** Transactions this one replaced (same relayer nonce, lower fee), oldest first. */
  replacedTxHashes: Hex[];
  /** How many times the current bytes were handed to the node. */
  broadcasts: number;
  /** Unix ms of the latest send of the current bytes (re-sends included); null before the first. */
  lastBroadcastAt: number | null;
  /**
   * Unix ms of the first send of the current bytes (schema 19; a replacement starts it again):
   * how long the transaction has waited is counted from here. Null before the first send.
   */
  firstBroadcastAt: number | null;
  createdAt: number;
  updatedAt: number;
  /** The process that stored it (schema 15; null before). */
  owner: string | null;
  /** Unix ms when a process committed to sending its bytes (claimSend), before the send; null: never sent. */
  sendStartedAt: number | null;
  /** From the receipt that showed the payment (schema 17); null before one was judged paid. */
  gasUsed: bigint | null;
  /** Wei per gas the receipt says was paid; null before, or when the node's receipt omits it. */
  effectiveGasPrice: bigint | null;
};
