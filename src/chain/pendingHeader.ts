import type { Hex } from "viem";
import { parseBlockHeader } from "./blockHeaders.js";
import type { RpcClient } from "./rpcClient.js";

/** The newest block of a Flashblocks node's pending view: its number and the parent it was built on. */
export type PendingHeader = { number: number; parentHash: Hex };

/**
 * eth_getBlockByNumber("pending"): the newest pre-confirmed block, or undefined when the node has no
 * pending view (it answers null). Note: a Flashblocks node answers from its pre-confirmed state with a
 * zero block hash; its parentHash is the block the sequencer built on.
 */
export function getPendingHeader(client: RpcClient): Promise<PendingHeader | undefined> {
  return client.request("eth_getBlockByNumber", ["pending", false], (result) => {
    if (result === null) return undefined;
    const { number, parentHash } = parseBlockHeader(result, 'eth_getBlockByNumber("pending")');
    return { number, parentHash };
  });
}
