/** A ready transaction as anvil lists it (a full RPC transaction object). */
export type PoolEntry = Record<string, unknown> & {
  hash: string;
  from: string;
  nonce: string;
  gas: string;
};

/** anvil's `txpool_content` "pending" part: ready transactions by sender, then by nonce (decimal). */
export type ReadyBySender = Record<string, Record<string, PoolEntry>>;

/** anvil's `txpool_inspect` "pending" part: a line per ready transaction, by sender and nonce. */
export type ReadyLines = Record<string, Record<string, string>>;

type Arrival = { order: number; tx?: PoolEntry };

/**
 * The sequencer's view of anvil's pool. Order: as transactions arrived through the front (anvil's
 * `--order fifo`), each sender's in nonce order; one that came another way goes after those.
 * Contents: what the front admitted, fetched once each (eth_getTransactionByHash) and matched to
 * the pool's one-line listing (`txpool_inspect`, under a millisecond); anvil's full listing
 * (`txpool_content`, about 50 ms for 200 transactions) only when the pool holds one the front has
 * not seen, as its own pending block (eth_getBlockByNumber "pending") executes them all.
 */
export function createPoolOrder(fetch: (hash: string) => Promise<PoolEntry | null>) {
  let next = 0;
  /** Transactions admitted through the front, by lower-case hash. */
  const arrivals = new Map<string, Arrival>();
  /** Their hashes by sender and nonce: the newest admitted for a slot replaces an older one. */
  const bySlot = new Map<string, string>();
  /** Fetches still under way: a read of the ready list waits for them. */
  const loading = new Set<Promise<void>>();

  const slotOf = (from: string, nonce: bigint) => `${from.toLowerCase()}:${nonce}`;

  /** `txs` in arrival order, each sender's in nonce order (one not admitted here after those that were). */
  function orderOf<T extends { hash: string; from: string; nonce: string }>(txs: T[]): T[] {
    const bySender = new Map<string, T[]>();
    for (const tx of txs) {
      const from = tx.from.toLowerCase();
      bySender.set(from, [...(bySender.get(from) ?? []), tx]);
    }
    const keyed: Array<{ tx: T; key: number; nonce: bigint }> = [];
    for (const txs of bySender.values()) {
      txs.sort((a, b) => Number(BigInt(a.nonce) - BigInt(b.nonce)));
      // A transaction never goes before its sender's lower nonce: it takes the later arrival.
      let key = -1;
      for (const tx of txs) {
        const order = arrivals.get(tx.hash.toLowerCase())?.order ?? Number.MAX_SAFE_INTEGER;
        key = Math.max(key, order);
        keyed.push({ tx, key, nonce: BigInt(tx.nonce) });
      }
    }
    return keyed
      .sort(
        (a, b) => a.key - b.key || a.tx.from.localeCompare(b.tx.from) || Number(a.nonce - b.nonce),
      )
      .map(({ tx }) => tx);
  }

  /** The line `txpool_inspect` shows for `tx`: to, value, gas and the fee cap. */
  const lineOf = (tx: PoolEntry) =>
    `${String(tx.to).toLowerCase()}: ${BigInt(String(tx.value))} wei + ${BigInt(tx.gas)} gas × ${BigInt(String(tx.maxFeePerGas ?? tx.gasPrice))} wei`;

  /**
   * Every transaction the listings name, from what the front admitted or `also` (transactions
   * the caller holds); undefined when one is neither (or differs from it).
   */
  async function listedEntries(
    listings: ReadyLines[],
    also: readonly PoolEntry[],
  ): Promise<PoolEntry[] | undefined> {
    await Promise.all([...loading]);
    const others = new Map(also.map((tx) => [slotOf(tx.from, BigInt(tx.nonce)), tx]));
    const entries: PoolEntry[] = [];
    for (const listing of listings)
      for (const [from, byNonce] of Object.entries(listing))
        for (const [nonce, line] of Object.entries(byNonce)) {
          const slot = slotOf(from, BigInt(nonce));
          const hash = bySlot.get(slot);
          const tx = (hash === undefined ? undefined : arrivals.get(hash)?.tx) ?? others.get(slot);
          if (tx === undefined || lineOf(tx) !== line) return undefined;
          entries.push(tx);
        }
    return entries;
  }

  return {
    /** A transaction entered anvil's pool through the front now (sent again: it arrived again). */
    arrived(hash: string): void {
      const key = hash.toLowerCase();
      const arrival: Arrival = { order: next++ };
      arrivals.set(key, arrival);
      const fetched = fetch(key)
        .then((tx) => {
          if (tx === null || arrivals.get(key) !== arrival) return;
          arrival.tx = tx;
          const slot = slotOf(tx.from, BigInt(tx.nonce));
          // The one it replaced in the pool is gone from it.
          const replaced = bySlot.get(slot);
          if (replaced !== undefined && replaced !== key) arrivals.delete(replaced);
          bySlot.set(slot, key);
        })
        // Not fetched: the pool's full listing is read while it waits there.
        .catch(() => undefined)
        .finally(() => loading.delete(fetched));
      loading.add(fetched);
    },
    /** Transactions that left the pool for good (mined or dropped): forgotten. */
    forget(hashes: Iterable<string>): void {
      for (const hash of hashes) {
        const key = hash.toLowerCase();
        const tx = arrivals.get(key)?.tx;
        if (tx !== undefined && bySlot.get(slotOf(tx.from, BigInt(tx.nonce))) === key)
          bySlot.delete(slotOf(tx.from, BigInt(tx.nonce)));
        arrivals.delete(key);
      }
    },
    /**
     * The ready transactions the listing names, in order, from what the front admitted; undefined
     * when one is not the front's (or differs from it): then read them all with `order`.
     */
    async known(listed: ReadyLines): Promise<PoolEntry[] | undefined> {
      const entries = await listedEntries([listed], []);
      return entries === undefined ? undefined : orderOf(entries);
    },
    listed: listedEntries,
    inArrivalOrder: orderOf,
    /** The ready transactions of anvil's full listing, in order. */
    order: (ready: ReadyBySender): PoolEntry[] =>
      orderOf(Object.values(ready).flatMap((byNonce) => Object.values(byNonce))),
  };
}

export type PoolOrder = ReturnType<typeof createPoolOrder>;
