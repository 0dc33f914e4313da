import type { Address } from "viem";

/**
 * The last transaction nonce this process used per relayer. A Base node's
 * `eth_getTransactionCount(relayer, "pending")` counts pre-confirmed transactions only, never a mempool
 * (Flashblocks): for up to a flashblock (~200 ms) after a send it still answers the nonce just used,
 * and a second send taking it would replace or collide with the first.
 */
export type RelayerNonces = {
  /** The nonce to send with: the node's pending count, or one past the last one used here, whichever is higher. Reserves it. */
  next: (relayer: Address, pendingCount: number) => number;
  /** A send that the node never accepted: the nonce may be used again. */
  release: (relayer: Address, nonce: number) => void;
};

/** One per process (the cancel command makes one); keeps nothing on disk. */
export function createRelayerNonces(): RelayerNonces {
  const last = new Map<string, number>();
  return {
    next(relayer, pendingCount) {
      const key = relayer.toLowerCase();
      const previous = last.get(key);
      const nonce = previous === undefined ? pendingCount : Math.max(pendingCount, previous + 1);
      last.set(key, nonce);
      return nonce;
    },
    release(relayer, nonce) {
      const key = relayer.toLowerCase();
      if (last.get(key) === nonce) {
        if (nonce === 0) last.delete(key);
        else last.set(key, nonce - 1);
      }
    },
  };
}
