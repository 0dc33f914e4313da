import type { Finality } from "../config/types.js";
import { getBlockHeader } from "./blockHeaders.js";
import { RpcResponseError } from "../errors/rpc.js";
import type { RpcClient } from "./rpcClient.js";

export type ChainTips = { head: number; finalized: number };

/** The head and the last block the configured finality calls final (a tag, or a depth below the head). */
export async function getChainTips(client: RpcClient, finality: Finality): Promise<ChainTips> {
  const latest = await getBlockHeader(client, "latest");
  if (latest === undefined)
    throw new RpcResponseError("eth_getBlockByNumber(latest) returned null");
  if ("depth" in finality)
    return { head: latest.number, finalized: Math.max(0, latest.number - finality.depth) };
  const final = await getBlockHeader(client, finality.tag);
  // A young chain has no finalized block yet: nothing is final.
  return {
    head: latest.number,
    finalized: final === undefined ? -1 : Math.min(final.number, latest.number),
  };
}
