import type { Hex } from "viem";
import { quantity } from "./rpcLog.js";
import { RpcResponseError } from "../errors/rpc.js";
import { inBatches } from "./inBatches.js";
import { WORD } from "./hexPatterns.js";
import type { RpcClient } from "./rpcClient.js";

export type BlockHeader = { number: number; hash: Hex; parentHash: Hex; timestamp: number };

/** Checks a block object from eth_getBlockByNumber/Hash (or a newHeads notification) and keeps the header fields. */
export function parseBlockHeader(value: unknown, where: string): BlockHeader {
  if (typeof value !== "object" || value === null)
    throw new RpcResponseError(`${where} is not a block object`);
  const block = value as Record<string, unknown>;
  const hash = block.hash;
  const parentHash = block.parentHash;
  if (typeof hash !== "string" || !WORD.test(hash))
    throw new RpcResponseError(`${where}.hash is malformed hex`);
  if (typeof parentHash !== "string" || !WORD.test(parentHash))
    throw new RpcResponseError(`${where}.parentHash is malformed hex`);
  return {
    number: quantity(block.number, `${where}.number`),
    hash: hash.toLowerCase() as Hex,
    parentHash: parentHash.toLowerCase() as Hex,
    timestamp: quantity(block.timestamp, `${where}.timestamp`),
  };
}

/** Header of a block by number or tag ("latest", "finalized", "safe"); undefined when the node has no such block. */
export async function getBlockHeader(
  client: RpcClient,
  block: number | "latest" | "finalized" | "safe",
): Promise<BlockHeader | undefined> {
  const tag = typeof block === "number" ? `0x${block.toString(16)}` : block;
  return client.request("eth_getBlockByNumber", [tag, false], (result) =>
    result === null ? undefined : parseBlockHeader(result, `eth_getBlockByNumber(${tag})`),
  );
}

/** Blocks per JSON-RPC batch when fetching headers. */
const HEADER_BATCH_SIZE = 100;

/** Headers of the given block numbers, in JSON-RPC batches of HEADER_BATCH_SIZE; each must exist. */
async function getHeadersByNumber(
  client: RpcClient,
  numbers: readonly number[],
): Promise<BlockHeader[]> {
  const headers: BlockHeader[] = [];
  await inBatches(client, numbers, HEADER_BATCH_SIZE, async (batch) => {
    const answers = await client.batch(
      batch.map((n) => ({
        method: "eth_getBlockByNumber",
        params: [`0x${n.toString(16)}`, false],
      })),
    );
    answers.forEach((answer, i) => {
      const number = batch[i]!;
      if (!answer.ok) throw answer.error;
      if (answer.result === null)
        throw new RpcResponseError(
          `eth_getBlockByNumber(${number}) returned null for a block that must exist`,
        );
      headers.push(parseBlockHeader(answer.result, `eth_getBlockByNumber(${number})`));
    });
  });
  return headers;
}

/** Headers of blocks `from..to` by number; each must exist. */
export function getHeaders(client: RpcClient, from: number, to: number): Promise<BlockHeader[]> {
  return getHeadersByNumber(
    client,
    Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i),
  );
}

/**
 * Timestamps of the given blocks (for nodes whose logs omit `blockTimestamp`).
 * Each block's hash must match the one its logs carried: otherwise the chain moved under us.
 */
export async function getBlockTimestamps(
  client: RpcClient,
  blocks: ReadonlyMap<number, Hex>,
): Promise<Map<number, number>> {
  const timestamps = new Map<number, number>();
  for (const header of await getHeadersByNumber(client, [...blocks.keys()])) {
    if (header.hash !== blocks.get(header.number))
      throw new RpcResponseError(
        `block ${header.number} has hash ${header.hash}, but its logs said ${blocks.get(header.number)}`,
      );
    timestamps.set(header.number, header.timestamp);
  }
  return timestamps;
}
