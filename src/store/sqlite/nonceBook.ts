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
 * processes on one file are serialised.
 */
export function createSqliteNonceBook(
  db: Database,
  chainId: number,
  write: <T>(work: () => T) => Promise<T>,
): NonceBook {
  /** A capture's live intent keeps its nonce: a racing second capture of the order gets that one, not a new one. */
  const liveCaptureNonce = (holder: string, relayer: Address): number | undefined => {
    const orderId = captureOrderId(holder);
    if (orderId === undefined) return undefined;
    const nonce = db
      .prepare(
        "SELECT relayer_nonce FROM order_captures WHERE order_id = ? AND relayer = ? AND status = 'sent'",
      )
      .pluck()
      .get(orderId, lower(relayer));
    return nonce === undefined ? undefined : Number(nonce);
  };
  return {
    reserve: ({ relayer, floor, holder, owner }, now) =>
      write(() => {
        const key = [chainId, lower(relayer)] as const;
        const live = liveCaptureNonce(holder, relayer);
        if (live !== undefined) return live;
        // Below the floor the chain has consumed the nonce, whoever's the transaction was.
        db.prepare(
          "UPDATE relayer_nonces SET state = 'landed', updated_at = ? WHERE chain_id = ? AND relayer = ? AND nonce < ? AND state IN ('reserved', 'signed', 'broadcast')",
        ).run(now, ...key, floor);
        db.prepare(
          "DELETE FROM relayer_nonces WHERE chain_id = ? AND relayer = ? AND nonce < ?",
        ).run(...key, floor - NONCE_BOOK_HISTORY);
        const above = (
          db
            .prepare(
              "SELECT * FROM relayer_nonces WHERE chain_id = ? AND relayer = ? AND nonce >= ? ORDER BY nonce",
            )
            .all(...key, floor) as NonceRow[]
        ).map(toEntry);
        const nonce = pickNonce(above, floor, now, holder);
        db.prepare(
          `INSERT INTO relayer_nonces (chain_id, relayer, nonce, holder, owner, state, tx_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'reserved', NULL, ?, ?)
           ON CONFLICT (chain_id, relayer, nonce) DO UPDATE SET holder = excluded.holder, owner = excluded.owner, state = 'reserved', tx_hash = NULL,
             created_at = excluded.created_at, updated_at = excluded.updated_at
           WHERE NOT (relayer_nonces.holder = excluded.holder AND relayer_nonces.state IN ('signed', 'broadcast'))`,
        ).run(...key, nonce, holder, owner, now, now);
        return nonce;
      }),
    mark: (ref, now) => write(() => markNonce(db, chainId, ref, ref.state, ref.txHash, now)),
    release: (ref, now) => write(() => releaseNonce(db, chainId, ref, now)),
    entries: async (relayer, fromNonce) =>
      (
        db
          .prepare(
            "SELECT * FROM relayer_nonces WHERE chain_id = ? AND relayer = ? AND nonce >= ? ORDER BY nonce",
          )
          .all(chainId, lower(relayer), fromNonce) as NonceRow[]
      ).map(toEntry),
  };
}

/** Inside a write transaction: moves the holder's nonce to `state`; false when another holds it (or it was released). */
export function markNonce(
  db: Database,
  chainId: number,
  ref: NonceRef,
  state: Exclude<NonceState, "reserved" | "released">,
  txHash: Hex | undefined,
  now: number,
): boolean {
  const changed = db
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
}

/** Inside a write transaction: releases the holder's nonce unless something was broadcast with it. */
export function releaseNonce(db: Database, chainId: number, ref: NonceRef, now: number): boolean {
  const changed = db
    .prepare(
      `UPDATE relayer_nonces SET state = 'released', updated_at = ?
       WHERE chain_id = ? AND relayer = ? AND nonce = ? AND holder = ? AND state IN ('reserved', 'signed')`,
    )
    .run(now, chainId, lower(ref.relayer), ref.nonce, ref.holder).changes;
  return changed === 1;
}

const lower = <T extends string>(value: T): T => value.toLowerCase() as T;
