import type { RpcLogObject } from "./rpcLogObject.js";
import { UpstreamError, type Upstream } from "./upstream.js";

type RawBlock = { number: string; hash: string; parentHash: string; timestamp: string } & Record<
  string,
  unknown
>;
type TrackedBlock = { number: number; hash: string; header: RawBlock; logs: RpcLogObject[] };

/** Blocks remembered for re-sending reorged-out logs. */
const TRACKED_BLOCKS = 512;

export type CanonicalEvents = {
  /** A block that joined the canonical chain, with all its logs. */
  onBlock: (header: RawBlock, logs: RpcLogObject[]) => void;
  /** Logs of a block that left the canonical chain, already flagged `removed: true`. */
  onRemoved: (logs: RpcLogObject[]) => void;
};

/**
 * Watches anvil's head by parent hash and turns every change into what a real node's subscriptions
 * send: newHeads and logs for new blocks, and, unlike anvil, the logs of reorged-out blocks again
 * with `removed: true`.
 */
export function createCanonicalWatcher(upstream: Upstream, events: CanonicalEvents) {
  const tracked = new Map<number, TrackedBlock>();
  let running: Promise<void> | undefined;
  let again = false;

  async function load(tag: string): Promise<TrackedBlock> {
    const header = await upstream.call<RawBlock>("eth_getBlockByNumber", [tag, false]);
    const logs = await upstream.call<RpcLogObject[]>("eth_getLogs", [{ blockHash: header.hash }]);
    return { number: Number(header.number), hash: header.hash, header, logs };
  }

  async function syncOnce(): Promise<void> {
    const latest = await load("latest");
    if (tracked.size === 0) {
      tracked.set(latest.number, latest);
      return;
    }
    if (tracked.get(latest.number)?.hash === latest.hash) return;
    const highest = Math.max(...tracked.keys());
    const lowest = Math.min(...tracked.keys());
    const branch = [latest];
    // Walk back over missed blocks and replaced blocks until the parent is one we hold.
    for (;;) {
      const first = branch[0]!;
      if (first.number === 0 || first.number - 1 < lowest) break;
      const parent = tracked.get(first.number - 1);
      if (parent !== undefined && parent.hash === first.header.parentHash) break;
      if (parent === undefined && first.number - 1 <= highest) break;
      branch.unshift(await load(`0x${(first.number - 1).toString(16)}`));
    }
    const start = branch[0]!.number;
    const orphaned = [...tracked.values()]
      .filter((b) => b.number >= start)
      .sort((a, b) => b.number - a.number);
    for (const block of orphaned) {
      tracked.delete(block.number);
      if (block.logs.length > 0)
        events.onRemoved(block.logs.map((log) => ({ ...log, removed: true })));
    }
    for (const block of branch) {
      tracked.set(block.number, block);
      events.onBlock(block.header, block.logs);
    }
    for (const number of tracked.keys())
      if (number < latest.number - TRACKED_BLOCKS) tracked.delete(number);
  }

  return {
    /** Compares with anvil's head now; concurrent calls coalesce into one more pass. */
    sync(): Promise<void> {
      if (running !== undefined) {
        again = true;
        return running;
      }
      running = (async () => {
        try {
          let raced = 0;
          do {
            again = false;
            try {
              await syncOnce();
            } catch (error) {
              // A reorg between reading a header and its logs: anvil no longer knows the block. Look again.
              if (
                !(error instanceof UpstreamError) ||
                !/unknown block/i.test(error.message) ||
                ++raced > 3
              )
                throw error;
              again = true;
            }
          } while (again);
        } finally {
          running = undefined;
        }
      })();
      return running;
    },
  };
}

export type CanonicalWatcher = ReturnType<typeof createCanonicalWatcher>;
