import type { Hex } from "viem";
import { PRECONFIRMED_BLOCK_HASH } from "../../rows/rpcLog.js";
import type { LogRow, LogSource } from "../../rows/logRow.js";

/**
 * Whether pre-confirmed rows of pending block `block`, built on `parent`, may be stored now:
 * "store" when the parent is the canonical block before it (or unknown: the node did not say, or the
 * parent is itself still pending, zero hash); "hold" while that canonical block is not applied yet
 * (flashblocks arrive 31-276 ms before their parent is canonical, base/base PR #979) or is another
 * block than the parent (the pending block sits on a branch the chain left, or our head is about to move).
 */
export function parentVerdict(
  block: number,
  parent: Hex | undefined,
  head: number,
  canonicalHashAt: (n: number) => Hex | undefined,
): "store" | "hold" {
  if (parent === undefined || parent === PRECONFIRMED_BLOCK_HASH) return "store";
  if (block - 1 > head) return "hold";
  const canonical = canonicalHashAt(block - 1);
  // Past the tracked blocks (final): nothing to compare with.
  if (canonical === undefined) return "store";
  return canonical === parent ? "store" : "hold";
}

/** Held batches at most: a few blocks' worth of flashblocks. */
const HELD_BATCHES_MAX = 64;

export type HeldBatch = {
  rows: LogRow[];
  source: LogSource;
  receivedAt: readonly number[];
  wrongParent: boolean;
};

/**
 * Pre-confirmed rows waiting for their parent block. Released when a head is applied (then judged
 * again); a batch whose block became canonical meanwhile is dropped: that block settles it.
 */
export function createHeldRows() {
  let held: HeldBatch[] = [];
  /** Logs held now, by block, transaction and index: a polled view sends the same logs every poll. */
  const keys = new Set<string>();
  const keyOf = (row: LogRow) => `${row.blockNumber}:${row.transactionHash}:${row.logIndex}`;
  return {
    hold(batch: HeldBatch): void {
      const rows = batch.rows.filter((row) => !keys.has(keyOf(row)));
      if (rows.length === 0) return;
      for (const row of rows) keys.add(keyOf(row));
      held.push({ ...batch, rows });
      if (held.length > HELD_BATCHES_MAX)
        for (const gone of held.splice(0, held.length - HELD_BATCHES_MAX))
          for (const row of gone.rows) keys.delete(keyOf(row));
    },
    /** Every held batch, emptied: the caller stores or holds each again. */
    take(): HeldBatch[] {
      const taken = held;
      held = [];
      keys.clear();
      return taken;
    },
    size: () => held.length,
  };
}
