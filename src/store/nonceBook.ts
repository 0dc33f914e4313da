import type { Address, Hex } from "viem";

/**
 * One relayer, one nonce book (schema 15, table `relayer_nonces`). Every transaction flashindex
 * signs with a relayer key takes its nonce here: the capture relay (`order capture`, the x402
 * settle, the daemon's driver), the cancel relay and the gap filler, in any process on the same
 * database. A reservation runs in one write transaction (SQLite `BEGIN IMMEDIATE`, Postgres an
 * advisory lock per relayer), so two processes never get the same nonce.
 *
 * The floor is the node's `eth_getTransactionCount(relayer, "pending")`. On Base that count holds
 * canonical and pre-confirmed transactions only, never a mempool (base/base
 * crates/execution/flashblocks/src/rpc/eth.rs): a nonce sent a moment ago is not in it yet, which
 * is why the book, not the node, says what is taken above the floor.
 *
 * States: reserved (handed out, nothing signed yet), signed (bytes exist, not known to be sent),
 * broadcast (a node took them, or said it already had them), landed (the count passed it),
 * released (given back before anything was broadcast with it: handed out again first).
 */
export type NonceState = "reserved" | "signed" | "broadcast" | "landed" | "released";

export type NonceEntry = {
  relayer: Address;
  nonce: number;
  holder: string;
  owner: string;
  state: NonceState;
  txHash: Hex | null;
  createdAt: number;
  updatedAt: number;
};

export type NonceReservation = { relayer: Address; floor: number; holder: string; owner: string };
export type NonceRef = { relayer: Address; nonce: number; holder: string };

export type NonceBook = {
  /**
   * Reserves the lowest nonce at or above `floor` that nothing holds (released ones first); returns
   * it. A holder that already holds a live nonce at or above the floor, or a capture whose order has
   * a live intent, gets that one back: two captures of one order racing each other share one
   * nonce, and the loser leaves no gap.
   */
  reserve: (reservation: NonceReservation, now: number) => Promise<number>;
  /** Moves the holder's nonce to `state` (with the bytes' hash); false when `holder` no longer holds it. */
  mark: (
    ref: NonceRef & { state: "signed" | "broadcast" | "landed"; txHash?: Hex | undefined },
    now: number,
  ) => Promise<boolean>;
  /** Gives back a nonce nothing was broadcast with; false (kept) once broadcast, or when another holds it. */
  release: (ref: NonceRef, now: number) => Promise<boolean>;
  /** The book's entries of `relayer` from `fromNonce` up, lowest first. */
  entries: (relayer: Address, fromNonce: number) => Promise<NonceEntry[]>;
};

/**
 * A reservation not signed within this long is taken back (ms): its process died between the
 * reservation and the signature, which is local and takes milliseconds. A cancel's or gap filler's
 * signed bytes live in no table: if they were not broadcast within this long they never will be.
 */
export const NONCE_RESERVATION_TTL_MS = 60_000;
/** Landed and released entries kept below the floor, for the audit; older ones are deleted. */
export const NONCE_BOOK_HISTORY = 256;

/** The holder of a capture intent's nonce. */
export const captureHolder = (orderId: number): string => `capture:${orderId}`;
/** The order id of a capture's holder; undefined for any other holder. */
export function captureOrderId(holder: string): number | undefined {
  const match = /^capture:([1-9][0-9]*)$/.exec(holder);
  return match === null ? undefined : Number(match[1]);
}
/** The holder of a relayed cancel's nonce. */
export const cancelHolder = (token: Address, authorizer: Address, nonce: Hex): string =>
  `cancel:${token.toLowerCase()}:${authorizer.toLowerCase()}:${nonce.toLowerCase()}`;
/** The holder of a 0-value self-transfer that fills a nonce no transaction holds (one per filler: each takes a nonce of its own). */
export const gapFillerHolder = (owner: string, at: number, index: number): string =>
  `gap_filler:${owner}:${at}:${index}`;

/** Whether an entry's nonce can be handed out again: released, or a reservation its process abandoned. */
export function isFree(
  entry: Pick<NonceEntry, "state" | "holder" | "updatedAt">,
  now: number,
): boolean {
  if (entry.state === "released") return true;
  const stale = now - entry.updatedAt >= NONCE_RESERVATION_TTL_MS;
  if (entry.state === "reserved") return stale;
  // A capture's signed bytes are stored with its intent: the driver sends them or abandons them.
  return entry.state === "signed" && stale && !entry.holder.startsWith("capture:");
}

/**
 * The nonce a reservation for `holder` gets: the one it already holds live, else the lowest at or
 * above `floor` with no entry or a free one. `entries`: those at or above `floor`.
 */
export function pickNonce(
  entries: ReadonlyArray<Pick<NonceEntry, "nonce" | "state" | "holder" | "updatedAt">>,
  floor: number,
  now: number,
  holder?: string,
): number {
  const held = entries.find(
    (e) => e.holder === holder && e.state !== "released" && e.state !== "landed" && !isFree(e, now),
  );
  if (held !== undefined) return held.nonce;
  const byNonce = new Map(entries.map((e) => [e.nonce, e]));
  for (let nonce = floor; ; nonce++) {
    const entry = byNonce.get(nonce);
    if (entry === undefined || isFree(entry, now)) return nonce;
  }
}

/**
 * Whether `owner` (processOwner's form) names a process on this host that is gone: its
 * reservations can be taken back at once rather than after NONCE_RESERVATION_TTL_MS.
 */
export function ownerIsGone(owner: string, host: string, alive: (pid: number) => boolean): boolean {
  const [ownerHost, pid] = owner.split(":");
  return (
    ownerHost === host && pid !== undefined && /^[1-9][0-9]*$/.test(pid) && !alive(Number(pid))
  );
}

/** A process's name in the book and on intents: host, pid and a random part (pids are reused). */
export function processOwner(host: string, pid: number): string {
  return `${host}:${pid}:${Math.random().toString(36).slice(2, 10)}`;
}
