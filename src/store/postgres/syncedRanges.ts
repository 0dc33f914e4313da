import type pg from "pg";
import type { Hex } from "viem";
import { contiguousEnd, mergeRanges, type BlockRange } from "../../blockRanges.js";

/**
 * Block ranges fully indexed per token over a Postgres connection (as SQLite's
 * sqlite/syncedRanges.ts): merged on write; the contiguous prefix from a token's start block is its
 * checkpoint.
 */
export function createPostgresSyncedRanges(client: pg.ClientBase, chainId: number) {
  async function list(token: Hex): Promise<BlockRange[]> {
    const { rows } = await client.query(
      `SELECT from_block AS "from", to_block AS "to" FROM synced_ranges WHERE chain_id = $1 AND token = $2 ORDER BY from_block`,
      [chainId, token],
    );
    return rows;
  }
  return {
    list,
    checkpoint: async (token: Hex, startBlock: number) =>
      contiguousEnd(await list(token), startBlock),
    /**
     * Records [from, to] as indexed for `token`, merging with neighbours. Call inside the window's
     * transaction.
     */
    async add(token: Hex, range: BlockRange): Promise<void> {
      // Two windows may commit side by side (writeQueue.ts): the read-merge-write of the ranges is
      // serialized by a lock held to the end of the transaction, taken after every row lock.
      await client.query(
        "SELECT pg_advisory_xact_lock(hashtext('flashindex:synced:' || current_schema()))",
      );
      const touching = (await list(token)).filter(
        (r) => r.from <= range.to + 1 && r.to + 1 >= range.from,
      );
      const [merged] = mergeRanges([...touching, range]);
      await client.query(
        "DELETE FROM synced_ranges WHERE chain_id = $1 AND token = $2 AND from_block <= $3 AND to_block >= $4",
        [chainId, token, merged!.to + 1, merged!.from - 1],
      );
      await client.query(
        "INSERT INTO synced_ranges (chain_id, token, from_block, to_block) VALUES ($1, $2, $3, $4)",
        [chainId, token, merged!.from, merged!.to],
      );
    },
  };
}
