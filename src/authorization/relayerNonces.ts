import { hostname } from "node:os";
import type { Address, Hex } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import { processOwner, type NonceBook } from "../store/nonceBook.js";
import { RetryableError } from "../errors/base.js";

/**
 * A process's hand on the relayers' shared nonce book (store/nonceBook.ts): capture, settle, cancel
 * and gap filling all take their nonces here, so no two transactions of flashindex's relayers share
 * a nonce unless one replaces the other on purpose, in any process on the same database.
 */
export type RelayerNonces = {
  /** This process's name in the book and on the intents it stores. */
  owner: string;
  /**
   * Reserves the nonce to send with: the lowest the book holds free at or above the node's pending
   * count (`floor` when the caller read it already, else read now).
   */
  reserve: (relayer: Address, holder: string, floor?: number) => Promise<number>;
  /** Records the signed bytes (`signed`) or that a node took them (`broadcast`). */
  mark: (
    relayer: Address,
    nonce: number,
    holder: string,
    state: "signed" | "broadcast",
    txHash: Hex,
  ) => Promise<boolean>;
  /** A nonce nothing was broadcast with: handed out again before a new one. */
  release: (relayer: Address, nonce: number, holder: string) => Promise<void>;
  /** The node's pending count for `relayer`. */
  pendingCount: (relayer: Address) => Promise<number>;
  /**
   * The node's pending count for `relayer` from a read begun at most FLOOR_FRESH_MS ago (one read
   * shared by the captures that ask meanwhile): a capture's floor.
   */
  recentPendingCount: (relayer: Address) => Promise<number>;
};

/**
 * How long a read of a relayer's pending count serves as the floor of the captures that ask after
 * it began (ms): at 25 settles a second on a relayer, one read in five instead of one per settle,
 * and no round trip before most signatures. An older floor is as safe as a fresh one: every nonce
 * flashindex's relayers send with is in the book (reserved, signed, broadcast or landed, none of
 * them free), so a floor below the node's only offers a nonce a transaction outside the book
 * took, which a fresh read taken before the send can offer too; the send then meets "nonce too
 * low" and the intent is abandoned for a new one (captureIntentSend.ts).
 */
export const FLOOR_FRESH_MS = 200;

/** One per process (per store): the book lives in the database, this only adds the floor and the owner's name. */
export function createRelayerNonces(deps: {
  client: RpcClient;
  book: NonceBook;
  owner?: string | undefined;
}): RelayerNonces {
  const { client, book } = deps;
  const owner = deps.owner ?? processOwner(hostname(), process.pid);
  const pendingCount = async (relayer: Address): Promise<number> =>
    // A Base node counts canonical and pre-confirmed transactions here, never a mempool
    // (base/base crates/execution/flashblocks/src/rpc/eth.rs): the floor, not the next free nonce.
    client.request("eth_getTransactionCount", [relayer, "pending"], parseCount);
  /** Each relayer's last read (lower-case address): when it began, and its count. */
  const recent = new Map<string, { at: number; count: Promise<number> }>();
  function recentPendingCount(relayer: Address): Promise<number> {
    const key = relayer.toLowerCase();
    const now = performance.now();
    const last = recent.get(key);
    if (last !== undefined && now - last.at < FLOOR_FRESH_MS) return last.count;
    const read = { at: now, count: pendingCount(relayer) };
    recent.set(key, read);
    // A failed read is not shared: the next capture asks again.
    read.count.catch(() => {
      if (recent.get(key) === read) recent.delete(key);
    });
    return read.count;
  }
  return {
    owner,
    pendingCount,
    recentPendingCount,
    reserve: async (relayer, holder, floor) =>
      book.reserve(
        { relayer, floor: floor ?? (await pendingCount(relayer)), holder, owner },
        Date.now(),
      ),
    mark: (relayer, nonce, holder, state, txHash) =>
      book.mark({ relayer, nonce, holder, state, txHash }, Date.now()),
    release: async (relayer, nonce, holder) =>
      void (await book.release({ relayer, nonce, holder }, Date.now())),
  };
}

/** A transaction count as a node answers it (hex); anything else is a garbled answer, retried. */
function parseCount(result: unknown): number {
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,13}$/.test(result))
    throw new RetryableError(`expected a hex transaction count, got ${JSON.stringify(result)}`);
  return Number(result);
}
