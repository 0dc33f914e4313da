import type { Hex } from "viem";
import type { NewOrder, Order } from "./orderStates.js";

/**
 * What the x402 facilitator answered for one order (table `x402_settlements`, schema 16):
 * `settling` while a /settle holds the claim and has not answered, `pending` once it answered
 * `settlement_pending`, `succeeded` / `failed` once it answered the outcome. A success is recorded
 * before it is answered: one payment gets at most one success, across processes and restarts.
 */
export type SettlementState = "settling" | "pending" | "succeeded" | "failed";

export type Settlement = {
  orderId: number;
  state: SettlementState;
  /** The holder's random token: only the holder of the claim records the answer. */
  claim: string;
  /** The transaction answered (success, pending, or a failure on chain); null when none. */
  txHash: Hex | null;
  /** The /settle body answered, JSON; null while settling. Returned again to a payment-identifier repeat. */
  answer: string | null;
  /** Unix ms. */
  claimedAt: number;
  answeredAt: number | null;
  /** Unix ms at which the chain contradicted a success already answered (a dropped, reverted or canceled capture); null while it holds. */
  contradictedAt: number | null;
  /** The order transition that contradicted it: `<from> -> <to> (<cause>)`. */
  contradiction: string | null;
};

/**
 * Which earlier standing a claim may take over: `open` (a first /settle: no row yet, a `failed`
 * one, or a `settling` one claimed before `staleBefore` by a process that never answered), or
 * `pending` (the follow-up of a `settlement_pending` answer).
 */
export type ClaimFrom = { kind: "open"; staleBefore: number } | { kind: "pending" };

/** The settle claims of the x402 facilitator, on either backend. Every write is one transaction. */
export type SettlementStore = {
  /**
   * Takes the claim on an order's settlement for `claim` if its standing allows (`from`), atomically:
   * of two processes claiming at once, one wins. Returns the row as it stands and whether we hold it.
   */
  claim: (
    orderId: number,
    claim: string,
    from: ClaimFrom,
    now: number,
  ) => Promise<{ claimed: boolean; settlement: Settlement }>;
  /**
   * Records a new order and takes the claim on it for `claim`, in one transaction (one write where a
   * first /settle would otherwise make two). OrderExistsError when the authorization has an order.
   */
  addAndClaim: (order: NewOrder, claim: string, now: number) => Promise<Order>;
  /**
   * Records the answer given under `claim` (state, transaction, body, and the block of the
   * receipt a success was answered on: schema 17, the `settlement.settled` webhook's). False when the claim was
   * taken over meanwhile: nothing is recorded, and the caller must not answer success.
   */
  answer: (
    orderId: number,
    claim: string,
    outcome: {
      state: Exclude<SettlementState, "settling">;
      txHash: Hex | null;
      answer: string;
      blockNumber?: bigint | undefined;
    },
    now: number,
  ) => Promise<boolean>;
  get: (orderId: number) => Promise<Settlement | undefined>;
  /** How many answered successes the chain contradicted later (the metric and the alert read it). */
  contradicted: () => Promise<number>;
};

/** Row of `x402_settlements` (either backend's column names). */
export type SettlementRow = {
  order_id: number | string;
  state: SettlementState;
  claim: string;
  tx_hash: string | null;
  answer: string | null;
  claimed_at: number | string;
  answered_at: number | string | null;
  contradicted_at: number | string | null;
  contradiction: string | null;
};

/** Maps a row of `x402_settlements` to a Settlement. */
export function toSettlement(row: SettlementRow): Settlement {
  return {
    orderId: Number(row.order_id),
    state: row.state,
    claim: row.claim,
    txHash: row.tx_hash as Hex | null,
    answer: row.answer,
    claimedAt: Number(row.claimed_at),
    answeredAt: row.answered_at === null ? null : Number(row.answered_at),
    contradictedAt: row.contradicted_at === null ? null : Number(row.contradicted_at),
    contradiction: row.contradiction,
  };
}
