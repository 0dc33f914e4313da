import type { Hex } from "viem";

/**
 * The senders the stand-in holds back (devnet_holdSenders), as a relayer is stuck on Base: its
 * transaction is accepted into the mempool and no flashblock includes it, because it is
 * under-priced (its max fee below the base fee, or its tip below what the builder takes when
 * blocks are full) or behind a nonce gap. The node answers the send with the hash; there is no
 * receipt, pre-confirmed or canonical, and the "pending" nonce, which never counts the mempool,
 * does not count it.
 *
 * While a sender is held, its new transactions are kept here rather than in anvil's pool: anvil
 * would mine them with every block, and setting them aside at each block took the sequencer 0.2
 * to 0.6 s per block with 60 of them held (measured on the devnet), a delay no Base sequencer adds
 * to the other senders. Released, they go to anvil in nonce order and are pre-confirmed at the
 * next flashblock. Where it differs from a node's mempool: a held transaction is not found by
 * hash, and a replacement on the same nonce takes the place of the one kept whatever its fees.
 */
export function createHeldSenders() {
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
    /** Whether any sender is held: only then does a send need its sender known. */
    active: () => held.size > 0,
    /**
     * Keeps `raw`, sent by `from` at `nonce`, when `from` is held: whether it was kept (anvil took
     * it and named its sender; the caller takes it out of anvil's pool).
     */
    keep(raw: Hex, from: string, nonce: number): boolean {
      const sender = from.toLowerCase();
      if (!held.has(sender)) return false;
      const byNonce = kept.get(sender) ?? new Map<number, Hex>();
      kept.set(sender, byNonce);
      byNonce.set(nonce, raw);
      return true;
    },
  };
}

export type HeldSenders = ReturnType<typeof createHeldSenders>;
