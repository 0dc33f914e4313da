/** A ready transaction as anvil's `txpool_content` lists it (a full RPC transaction object). */
export type PoolEntry = Record<string, unknown> & {
  hash: string;
  from: string;
  nonce: string;
  gas: string;
};

/** anvil's `txpool_content` "pending" part: ready transactions by sender, then by nonce (decimal). */
export type ReadyBySender = Record<string, Record<string, PoolEntry>>;

/**
 * The order the sequencer takes pool transactions in: as they arrived through the front (anvil's
 * `--order fifo`), each sender's in nonce order; one that came another way goes after those.
 * Reading the pool this way costs a list, where anvil's own pending block executes every pool
 * transaction on each read.
 */
export function createPoolOrder() {
  let next = 0;
  /** When each transaction sent through the front arrived, by lower-case hash. */
  const arrivals = new Map<string, number>();

  return {
    /** A transaction entered anvil's pool through the front now (sent again: it arrived again). */
    arrived: (hash: string) => void arrivals.set(hash.toLowerCase(), next++),
    /** Transactions that left the pool for good (mined or dropped): their arrival is forgotten. */
    forget: (hashes: Iterable<string>) => {
      for (const hash of hashes) arrivals.delete(hash.toLowerCase());
    },
    /**
     * The ready transactions in the order they are taken: a transaction never goes before its
     * sender's lower nonce (it takes the later of its arrival and its predecessor's).
     */
    order: (ready: ReadyBySender): PoolEntry[] => {
      const keyed: Array<{ tx: PoolEntry; key: number; nonce: bigint }> = [];
      for (const bySender of Object.values(ready)) {
        const txs = Object.values(bySender).sort((a, b) =>
          Number(BigInt(a.nonce) - BigInt(b.nonce)),
        );
        let key = -1;
        for (const tx of txs) {
          key = Math.max(key, arrivals.get(tx.hash.toLowerCase()) ?? Number.MAX_SAFE_INTEGER);
          keyed.push({ tx, key, nonce: BigInt(tx.nonce) });
        }
      }
      return keyed
        .sort(
          (a, b) =>
            a.key - b.key || a.tx.from.localeCompare(b.tx.from) || Number(a.nonce - b.nonce),
        )
        .map(({ tx }) => tx);
    },
  };
}

export type PoolOrder = ReturnType<typeof createPoolOrder>;
