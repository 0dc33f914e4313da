import { keccak256, parseTransaction, recoverTransactionAddress, type Hex } from "viem";

/**
 * The senders the stand-in holds back (devnet_holdSenders), as a relayer is stuck on Base: its
 * transaction is accepted into the mempool and no flashblock includes it, because it is
 * under-priced (its max fee below the base fee, or its tip below what the builder takes when
 * blocks are full) or behind a nonce gap. The node answers the send with the hash; there is no
 * receipt, pre-confirmed or canonical, and the "pending" nonce, which never counts the mempool,
 * does not count it.
 *
 * While a sender is held, its new transactions are kept here rather than in anvil's pool: anvil
 * would execute them in every pending block it builds and mine them with every block, and setting
 * them aside at each block took the sequencer 0.2 to 0.6 s per block with 60 of them held
 * (measured on the devnet), a delay no Base sequencer adds to the other senders. Released, they go
 * to anvil in nonce order and are pre-confirmed at the next flashblock. Where it differs from a
 * node's mempool: a held transaction is not found by hash, and a replacement on the same nonce
 * takes the place of the one kept whatever its fees.
 */
export function createHeldSenders(latestNonce: (address: string) => Promise<number>) {
  let held = new Set<string>();
  /** Kept raw transactions by sender (lower-case), then nonce. */
  const kept = new Map<string, Map<number, Hex>>();

  return {
    /** Whether `address`'s transactions are held back now. */
    has: (address: string) => held.has(address.toLowerCase()),
    /** The held senders, lower-case. */
    senders: () => [...held],
    /**
     * Replaces the held set (any case; empty releases all). Returns the kept transactions of the
     * senders released, each sender's in nonce order, for the caller to hand to anvil.
     */
    set(senders: readonly string[]): Hex[] {
      held = new Set(senders.map((s) => s.toLowerCase()));
      const released: Hex[] = [];
      for (const [sender, byNonce] of [...kept.entries()]) {
        if (held.has(sender)) continue;
        kept.delete(sender);
        for (const [, raw] of [...byNonce.entries()].sort(([a], [b]) => a - b)) released.push(raw);
      }
      return released;
    },
    /**
     * Keeps `raw` when its sender is held and its nonce not yet mined: its hash, as a node answers
     * a send. Undefined when it goes to anvil as usual (not held, not decodable, nonce too low:
     * anvil answers those as a node does).
     */
    async keep(raw: Hex): Promise<Hex | undefined> {
      if (held.size === 0) return undefined;
      let from: string;
      let nonce: number;
      try {
        from = (
          await recoverTransactionAddress({ serializedTransaction: raw as never })
        ).toLowerCase();
        nonce = parseTransaction(raw).nonce ?? 0;
      } catch {
        return undefined;
      }
      if (!held.has(from) || nonce < (await latestNonce(from))) return undefined;
      // Released while the nonce was read: it goes to anvil, not into a map nobody empties.
      if (!held.has(from)) return undefined;
      const byNonce = kept.get(from) ?? new Map<number, Hex>();
      kept.set(from, byNonce);
      byNonce.set(nonce, raw);
      return keccak256(raw);
    },
  };
}

export type HeldSenders = ReturnType<typeof createHeldSenders>;
