import type { SentReceipt } from "./captureSyncSend.js";

/**
 * Most receipts kept for waits that have not come for them: a capture whose caller never waits
 * (an error between send and wait) must not grow the map for the process's life.
 */
const MAX_SENT_RECEIPTS = 10_000;

/** Receipts that came with a send (captureSyncSend.ts), kept per order until its wait takes it. */
export type SentReceipts = {
  put: (orderId: number, seen: SentReceipt) => void;
  /** The order's receipt, forgotten as it is taken: a later wait reads the chain again. */
  take: (orderId: number) => SentReceipt | undefined;
};

/** The hand-over from the capture relay's send (captureIntentSend.ts) to its wait. */
export function createSentReceipts(): SentReceipts {
  const kept = new Map<number, SentReceipt>();
  return {
    put(orderId, seen) {
      kept.delete(orderId);
      kept.set(orderId, seen);
      // A Map iterates in insertion order: the first key is the oldest.
      if (kept.size > MAX_SENT_RECEIPTS) kept.delete(kept.keys().next().value!);
    },
    take(orderId) {
      const seen = kept.get(orderId);
      kept.delete(orderId);
      return seen;
    },
  };
}
