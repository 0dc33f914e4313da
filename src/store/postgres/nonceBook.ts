import type pg from "pg";
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

type InTransaction = <T>(work: (client: pg.ClientBase) => Promise<T>) => Promise<T>;

const COLUMNS = `relayer, nonce, holder, owner, state, tx_hash AS "txHash", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Serialises reservations per relayer across connections (a transaction-level advisory lock). */
const NONCE_LOCK = "flashindex:relayer_nonces:";

const toEntry = (row: Record<string, unknown>): NonceEntry => ({
  relayer: row.relayer as Address,
  nonce: Number(row.nonce),
  holder: row.holder as string,
  owner: row.owner as string,
  state: row.state as NonceState,
  txHash: (row.txHash as Hex | null) ?? null,
  createdAt: Number(row.createdAt),
  updatedAt: Number(row.updatedAt),
});

/**
 * The nonce book over Postgres (store/nonceBook.ts). A reservation takes an advisory lock on
 * (chain, relayer, schema) for its transaction before it reads the book: processes on one database
 * are serialised per relayer, and an empty book (no row to lock FOR UPDATE) is covered too.
 */
export function createPostgresNonceBook(
  chainId: number,
  write: InTransaction,
  read: InTransaction,
): NonceBook {
  return {
    reserve: ({ relayer, floor, holder, owner }, now) =>
      write(async (client) => {
        const key = [chainId, lower(relayer)];
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1 || current_schema()))", [
          `${NONCE_LOCK}${chainId}:${lower(relayer)}:`,
        ]);
        // A capture's live intent keeps its nonce: a racing second capture of the order gets that one, not a new one.
        const orderId = captureOrderId(holder);
        if (orderId !== undefined) {
          const live = await client.query(
            "SELECT relayer_nonce FROM order_captures WHERE order_id = $1 AND relayer = $2 AND status = 'sent'",
            [orderId, lower(relayer)],
          );
          if (live.rows[0] !== undefined) return Number(live.rows[0].relayer_nonce);
        }
        await client.query(
          "UPDATE relayer_nonces SET state = 'landed', updated_at = $3 WHERE chain_id = $1 AND relayer = $2 AND nonce < $4 AND state IN ('reserved', 'signed', 'broadcast')",
          [...key, now, floor],
        );
        await client.query(
          "DELETE FROM relayer_nonces WHERE chain_id = $1 AND relayer = $2 AND nonce < $3",
          [...key, floor - NONCE_BOOK_HISTORY],
        );
        const { rows } = await client.query(
          `SELECT ${COLUMNS} FROM relayer_nonces WHERE chain_id = $1 AND relayer = $2 AND nonce >= $3 ORDER BY nonce`,
          [...key, floor],
        );
        const nonce = pickNonce(rows.map(toEntry), floor, now, holder);
        await client.query(
          `INSERT INTO relayer_nonces (chain_id, relayer, nonce, holder, owner, state, tx_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'reserved', NULL, $6, $6)
           ON CONFLICT (chain_id, relayer, nonce) DO UPDATE SET holder = excluded.holder, owner = excluded.owner, state = 'reserved', tx_hash = NULL,
             created_at = excluded.created_at, updated_at = excluded.updated_at
           WHERE NOT (relayer_nonces.holder = excluded.holder AND relayer_nonces.state IN ('signed', 'broadcast'))`,
          [...key, nonce, holder, owner, now],
        );
        return nonce;
      }),
    mark: (ref, now) =>
      write((client) => markNonce(client, chainId, ref, ref.state, ref.txHash, now)),
    release: (ref, now) => write((client) => releaseNonce(client, chainId, ref, now)),
    entries: (relayer, fromNonce) =>
      read(async (client) => {
        const { rows } = await client.query(
          `SELECT ${COLUMNS} FROM relayer_nonces WHERE chain_id = $1 AND relayer = $2 AND nonce >= $3 ORDER BY nonce`,
          [chainId, lower(relayer), fromNonce],
        );
        return rows.map(toEntry);
      }),
  };
}

/** Inside a write transaction: moves the holder's nonce to `state`; false when another holds it (or it was released). */
export async function markNonce(
  client: pg.ClientBase,
  chainId: number,
  ref: NonceRef,
  state: Exclude<NonceState, "reserved" | "released">,
  txHash: Hex | undefined,
  now: number,
): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE relayer_nonces SET state = $1, tx_hash = COALESCE($2, tx_hash), updated_at = $3
     WHERE chain_id = $4 AND relayer = $5 AND nonce = $6 AND holder = $7 AND state <> 'released'`,
    [
      state,
      txHash === undefined ? null : lower(txHash),
      now,
      chainId,
      lower(ref.relayer),
      ref.nonce,
      ref.holder,
    ],
  );
  return rowCount === 1;
}

/** Inside a write transaction: releases the holder's nonce unless something was broadcast with it. */
export async function releaseNonce(
  client: pg.ClientBase,
  chainId: number,
  ref: NonceRef,
  now: number,
): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE relayer_nonces SET state = 'released', updated_at = $1
     WHERE chain_id = $2 AND relayer = $3 AND nonce = $4 AND holder = $5 AND state IN ('reserved', 'signed')`,
    [now, chainId, lower(ref.relayer), ref.nonce, ref.holder],
  );
  return rowCount === 1;
}

const lower = <T extends string>(value: T): T => value.toLowerCase() as T;
