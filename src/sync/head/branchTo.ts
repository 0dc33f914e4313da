import { getBlockHeader, type BlockHeader } from "../../chain/blockHeaders.js";
import type { RpcClient } from "../../chain/rpcClient.js";
import { FatalError } from "../../errors/base.js";
import { RpcResponseError } from "../../errors/rpc.js";
import type { BlockTracker } from "./blockTracker.js";

/**
 * The branch from the tracked chain to `head`: walks back from `head` to a block whose parent the
 * tracker holds, oldest block first. Throws FatalError when the fork lies deeper than the tracked
 * blocks, RpcResponseError when the chain moves during the walk.
 */
export async function branchTo(
  tracker: BlockTracker,
  client: RpcClient,
  head: BlockHeader,
): Promise<BlockHeader[]> {
  const branch = [head];
  for (;;) {
    const first = branch[0]!;
    const known = tracker.hashAt(first.number - 1);
    if (known === first.parentHash) return branch;
    const oldest = tracker.oldest();
    if (oldest === undefined || first.number - 1 < oldest.number)
      throw new FatalError(
        `Reorg deeper than the ${tracker.size()} tracked blocks at block ${first.number}: refusing to diverge from the chain`,
        {
          details: `the canonical parent ${first.parentHash} of block ${first.number} is not among the tracked unfinalized blocks; check the finality setting`,
        },
      );
    const parent = await getBlockHeader(client, first.number - 1);
    if (parent === undefined || parent.hash !== first.parentHash)
      throw new RpcResponseError(`the chain moved while walking back from block ${head.number}`);
    branch.unshift(parent);
  }
}
