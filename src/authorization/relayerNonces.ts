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
};

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
  return {
    owner,
    pendingCount,
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
