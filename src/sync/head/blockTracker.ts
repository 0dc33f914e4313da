import type { Hex } from "viem";
import type { BlockHeader } from "../../chain/blockHeaders.js";

/**
 * The recent unfinalized blocks, linked by parentHash: the memory against which a new head is
 * checked for a reorg. Blocks are contiguous by number; the oldest is just above the finalized block.
 */
export function createBlockTracker() {
  let blocks: BlockHeader[] = [];

  const head = (): BlockHeader | undefined => blocks[blocks.length - 1];
  const oldest = (): BlockHeader | undefined => blocks[0];

  return {
    head,
    oldest,
    size: () => blocks.length,
    /** The tracked hash at `number`, if that block is tracked. */
    hashAt(number: number): Hex | undefined {
      const first = oldest();
      if (first === undefined) return undefined;
      return blocks[number - first.number]?.hash;
    },
    /** Appends a block that extends the head; throws if it does not (callers check first). */
    push(block: BlockHeader): void {
      const tip = head();
      if (tip !== undefined && (block.number !== tip.number + 1 || block.parentHash !== tip.hash))
        throw new Error(
          `block ${block.number} (${block.hash}) does not extend tracked head ${tip.number} (${tip.hash})`,
        );
      blocks.push(block);
    },
    /** The tracked blocks above `number`, oldest first (what a reorg to `number` would orphan). */
    blocksAbove(number: number): BlockHeader[] {
      return blocks.filter((b) => b.number > number);
    },
    /** Forgets every block above `number` and returns them (the orphaned branch of a reorg). */
    rewindTo(number: number): BlockHeader[] {
      const keep = blocks.filter((b) => b.number <= number);
      const orphaned = blocks.filter((b) => b.number > number);
      blocks = keep;
      return orphaned;
    },
    /** Stops tracking blocks at or below `number` (they are final now); the head is always kept as the anchor for the next block. */
    forgetThrough(number: number): void {
      const tip = head();
      blocks = blocks.filter((b) => b.number > number || b === tip);
    },
    /** Replaces everything tracked (start-up, or after a gap too long to walk). */
    reset(chain: readonly BlockHeader[]): void {
      blocks = [...chain];
    },
  };
}

export type BlockTracker = ReturnType<typeof createBlockTracker>;
