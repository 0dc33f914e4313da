import type { Database } from "better-sqlite3";
import type { Address, Hex } from "viem";
import {
  captureOrderId,
  NONCE_BOOK_HISTORY,
  pickNonce,
  type NonceBook,
  type NonceEntry,
  type NonceRef,
  type NonceState,
} from "../nonceBook.js";
import { createStatementCache } from "./statementCache.js";

type NonceRow = {
  relayer: Address;
  nonce: number;
  holder: string;
  owner: string;
  state: NonceState;
  tx_hash: Hex | null;
  created_at: number;
  updated_at: number;
};

const toEntry = (row: NonceRow): NonceEntry => ({
  relayer: row.relayer,
  nonce: Number(row.nonce),
  holder: row.holder,
  owner: row.owner,
  state: row.state,
  txHash: row.tx_hash,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

/**
 * The nonce book over one SQLite connection (store/nonceBook.ts). `write` runs its work in one
 * `BEGIN IMMEDIATE` transaction: a reservation reads the book under the database's write lock, so
 * processes on one file are serialised. `marks`: the connection's (the capture store marks too).
 */
export function createSqliteNonceBook(
  db: Database,
  chainId: number,
  marks: SqliteNonceMarks,
  write: <T>(work: () => T) => Promise<T>,
): NonceBook {
  const statements = createStatementCache(db);
  /** A capture's live intent keeps its nonce: a racing second capture of the order gets that one, not a new one. */
  const liveCaptureNonce = (holder: string, relayer: Address): number | undefined => {
    const orderId = captureOrderId(holder);
    if (orderId === undefined) return undefined;
    const nonce = statements
      .pluck(
        "SELECT relayer_nonce FROM order_captures WHERE order_id = ? AND relayer = ? AND status = 'sent'",
      )
      .get(orderId, lower(relayer));
    return nonce === undefined ? undefined : Number(nonce);
  };
  const entriesFrom = (relayer: Address, fromNonce: number): NonceEntry[] =>
    (
      statements
        .prepare(
          "SELECT * FROM relayer_nonces WHERE chain_id = ? AND relayer = ? AND nonce >= ? ORDER BY nonce",
        )
        .all(chainId, lower(relayer), fromNonce) as NonceRow[]
    ).map(toEntry);
  return {
    reserve: ({ relayer, floor, holder, owner }, now) =>
      write(() => {
        const key = [chainId, lower(relayer)] as const;
        const live = liveCaptureNonce(holder, relayer);
        if (live !== undefined) return live;
        // Below the floor the chain has consumed the nonce, whoever's the transaction was.
        statements
          .prepare(
            "UPDATE relayer_nonces SET state = 'landed', updated_at = ? WHERE chain_id = ? AND relayer = ? AND nonce < ? AND state IN ('reserved', 'signed', 'broadcast')",
          )
          .run(now, ...key, floor);
        statements
          .prepare("DELETE FROM relayer_nonces WHERE chain_id = ? AND relayer = ? AND nonce < ?")
          .run(...key, floor - NONCE_BOOK_HISTORY);
        const nonce = pickNonce(entriesFrom(relayer, floor), floor, now, holder);
        statements
          .prepare(
            `INSERT INTO relayer_nonces (chain_id, relayer, nonce, holder, owner, state, tx_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'reserved', NULL, ?, ?)
             ON CONFLICT (chain_id, relayer, nonce) DO UPDATE SET holder = excluded.holder, owner = excluded.owner, state = 'reserved', tx_hash = NULL,
               created_at = excluded.created_at, updated_at = excluded.updated_at
             WHERE NOT (relayer_nonces.holder = excluded.holder AND relayer_nonces.state IN ('signed', 'broadcast'))`,
          )
          .run(...key, nonce, holder, owner, now, now);
        return nonce;
      }),
    mark: (ref, now) => write(() => marks.mark(ref, ref.state, ref.txHash, now)),
    release: (ref, now) => write(() => marks.release(ref, now)),
    entries: async (relayer, fromNonce) => entriesFrom(relayer, fromNonce),
  };
}

/** The book's moves inside a caller's write transaction (the nonce book's, the capture store's). */
export function createSqliteNonceMarks(db: Database, chainId: number) {
  const statements = createStatementCache(db);
  return {
    /** Moves the holder's nonce to `state`; false when another holds it (or it was released). */
    mark(
      ref: NonceRef,
      state: Exclude<NonceState, "reserved" | "released">,
      txHash: Hex | undefined,
      now: number,
    ): boolean {
      const changed = statements
        .prepare(
          `UPDATE relayer_nonces SET state = ?, tx_hash = COALESCE(?, tx_hash), updated_at = ?
           WHERE chain_id = ? AND relayer = ? AND nonce = ? AND holder = ? AND state <> 'released'`,
        )
        .run(
          state,
          txHash === undefined ? null : lower(txHash),
          now,
          chainId,
          lower(ref.relayer),
          ref.nonce,
          ref.holder,
        ).changes;
      return changed === 1;
    },
    /** Releases the holder's nonce unless something was broadcast with it. */
    release(ref: NonceRef, now: number): boolean {
      const changed = statements
        .prepare(
          `UPDATE relayer_nonces SET state = 'released', updated_at = ?
           WHERE chain_id = ? AND relayer = ? AND nonce = ? AND holder = ? AND state IN ('reserved', 'signed')`,
        )
        .run(now, chainId, lower(ref.relayer), ref.nonce, ref.holder).changes;
      return changed === 1;
    },
  };
}

export type SqliteNonceMarks = ReturnType<typeof createSqliteNonceMarks>;

const lower = <T extends string>(value: T): T => value.toLowerCase() as T;
