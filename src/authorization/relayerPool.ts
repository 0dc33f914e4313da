import { getAddress, isAddressEqual, type Address, type LocalAccount } from "viem";
import type { CaptureIntent } from "../store/orderStates.js";

/**
 * A capture not pre-confirmed this long after its first send makes its relayer stuck: the pool
 * gives that relayer no new settle until it is pre-confirmed or ends. Base pre-confirms within a
 * flashblock (~200 ms); 5 s is 25 flashblocks, well before the driver replaces it at 10 s
 * (captureRelay.ts CAPTURE_REPLACE_AFTER_MS), so the queue behind it stops growing first.
 */
export const RELAYER_STUCK_AFTER_MS = 5_000;

/** One relayer of the pool as the status page and the metrics show it. */
export type RelayerStanding = {
  address: Address;
  /** Captures this process sent from it (or is sending) and has not yet seen pre-confirmed. */
  pending: number;
  /** Whether its oldest such capture has waited RELAYER_STUCK_AFTER_MS or more. */
  stuck: boolean;
  /** Unix ms of its oldest such capture's first send; null when none waits. */
  oldestSentAt: number | null;
};

export type RelayerPool = {
  /** The keys, in configuration order. */
  accounts: readonly LocalAccount[];
  /** The signing key of a relayer address, when the pool holds it. */
  accountFor: (address: Address) => LocalAccount | undefined;
  /**
   * The relayer for a new capture: the one with the least pending work among those not stuck
   * (ties: configuration order). When every relayer is stuck, the one whose oldest waiting capture
   * was sent last (still moving) all the same: a pool of one keeps sending as a single key always
   * did, and the driver unsticks it. Undefined for an empty pool.
   */
  pick: (now: number) => LocalAccount | undefined;
  /** `orderId`'s capture now belongs to `relayer`'s pending work (signed, not yet seen pre-confirmed). */
  begin: (orderId: number, relayer: Address, now: number) => void;
  /** `orderId`'s capture was handed to the node: its wait for a pre-confirmation starts now (the first send counts). */
  sent: (orderId: number, now: number) => void;
  /** `orderId`'s capture was seen pre-confirmed, or ended: it no longer weighs on its relayer. */
  end: (orderId: number) => void;
  /**
   * Ends every sent entry whose order `isLive` no longer holds (the driver's pass over the store's
   * live intents); an entry not sent yet is its capture() call's to end.
   */
  prune: (isLive: (orderId: number) => boolean) => void;
  /** Each relayer's standing at `now`, in configuration order. */
  standings: (now: number) => RelayerStanding[];
};

/**
 * For a one-shot command (cancel) that has no load of its own to weigh: the relayer with the
 * fewest live capture intents in the store (every process's), ties in configuration order.
 */
export function leastBusyRelayer<A extends LocalAccount>(
  accounts: readonly A[],
  live: readonly Pick<CaptureIntent, "relayer">[],
): A | undefined {
  const load = (account: A) =>
    live.filter((c) => isAddressEqual(c.relayer, account.address)).length;
  return accounts
    .map((account, index) => ({ account, index, load: load(account) }))
    .sort((a, b) => a.load - b.load || a.index - b.index)[0]?.account;
}

/** A pool of relayer keys (facilitator.relayers); the single-key configuration is a pool of one. */
export function createRelayerPool(
  accounts: readonly LocalAccount[],
  options: { stuckAfterMs?: number | undefined } = {},
): RelayerPool {
  const stuckAfterMs = options.stuckAfterMs ?? RELAYER_STUCK_AFTER_MS;
  /** Per order: which relayer (lower case), and when its first send went out (null: signed, not sent yet). */
  const work = new Map<number, { relayer: string; sentAt: number | null }>();
  /** The keys by lower-case address: a pick runs per settle, so no checksum work on its path. */
  const byAddress = new Map<string, LocalAccount>();
  for (const account of accounts) {
    const key = account.address.toLowerCase();
    if (byAddress.has(key))
      throw new Error(`relayer ${getAddress(account.address)} is in the pool twice`);
    byAddress.set(key, account);
  }

  /** Every relayer's standing at `now`, in configuration order, from one pass over the work. */
  function standingsAt(now: number): RelayerStanding[] {
    const tally = new Map(
      accounts.map((account) => [
        account.address.toLowerCase(),
        { pending: 0, oldestSentAt: null as number | null },
      ]),
    );
    for (const entry of work.values()) {
      const counted = tally.get(entry.relayer);
      if (counted === undefined) continue;
      counted.pending++;
      if (
        entry.sentAt !== null &&
        (counted.oldestSentAt === null || entry.sentAt < counted.oldestSentAt)
      )
        counted.oldestSentAt = entry.sentAt;
    }
    return accounts.map((account) => {
      const { pending, oldestSentAt } = tally.get(account.address.toLowerCase())!;
      return {
        address: account.address,
        pending,
        oldestSentAt,
        stuck: oldestSentAt !== null && now - oldestSentAt >= stuckAfterMs,
      };
    });
  }

  return {
    accounts,
    accountFor: (address) => byAddress.get(address.toLowerCase()),
    pick(now) {
      const ranked = standingsAt(now).map((standing, index) => ({
        account: accounts[index]!,
        index,
        ...standing,
      }));
      const open = ranked.filter((r) => !r.stuck);
      if (open.length > 0) {
        open.sort((a, b) => a.pending - b.pending || a.index - b.index);
        return open[0]?.account;
      }
      // All stuck (a node slow for everyone, or a pool of one): the relayer whose oldest waiting
      // capture is the newest is the one still moving. Under load the fewest pending would be the
      // one that stopped: its queue no longer grows because nothing of it lands.
      ranked.sort(
        (a, b) =>
          (b.oldestSentAt ?? 0) - (a.oldestSentAt ?? 0) ||
          a.pending - b.pending ||
          a.index - b.index,
      );
      return ranked[0]?.account;
    },
    begin: (orderId, relayer) =>
      void work.set(orderId, { relayer: relayer.toLowerCase(), sentAt: null }),
    sent(orderId, now) {
      const entry = work.get(orderId);
      if (entry !== undefined && entry.sentAt === null) entry.sentAt = now;
    },
    end: (orderId) => void work.delete(orderId),
    prune(isLive) {
      for (const [orderId, entry] of [...work.entries()])
        if (entry.sentAt !== null && !isLive(orderId)) work.delete(orderId);
    },
    standings: standingsAt,
  };
}
