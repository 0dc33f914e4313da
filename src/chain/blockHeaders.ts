import type { Hex } from "viem";
import { quantity } from "./rpcLog.js";
import { RpcResponseError } from "./rpcErrors.js";
import type { RpcClient } from "./rpcClient.js";

export type BlockHeader = { number: number; hash: Hex; parentHash: Hex; timestamp: number };

const WORD = /^0x[0-9a-fA-F]{64}$/;

/** Checks a block object from eth_getBlockByNumber/Hash (or a newHeads notification) and keeps the header fields. */
export function parseBlockHeader(value: unknown, where: string): BlockHeader {
  if (typeof value !== "object" || value === null) throw new RpcResponseError(`${where} is not a block object`);
  const block = value as Record<string, unknown>;
  const hash = block.hash;
  const parentHash = block.parentHash;
  if (typeof hash !== "string" || !WORD.test(hash)) throw new RpcResponseError(`${where}.hash is malformed hex`);
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
export async function getBlockHeader(client: RpcClient, block: number | "latest" | "finalized" | "safe"): Promise<BlockHeader | undefined> {
  const tag = typeof block === "number" ? `0x${block.toString(16)}` : block;
  return client.request("eth_getBlockByNumber", [tag, false], (result) =>
    result === null ? undefined : parseBlockHeader(result, `eth_getBlockByNumber(${tag})`),
  );
}

/**
 * Timestamps of the given blocks (for nodes whose logs omit `blockTimestamp`), in one JSON-RPC batch.
 * Each block's hash must match the one its logs carried: otherwise the chain moved under us.
 */
export async function getBlockTimestamps(client: RpcClient, blocks: ReadonlyMap<number, Hex>): Promise<Map<number, number>> {
  const numbers = [...blocks.keys()];
  const answers = await client.batch(
    numbers.map((n) => ({ method: "eth_getBlockByNumber", params: [`0x${n.toString(16)}`, false] })),
  );
  const timestamps = new Map<number, number>();
  answers.forEach((answer, i) => {
    const number = numbers[i]!;
    if (!answer.ok) throw answer.error;
    if (answer.result === null) throw new RpcResponseError(`eth_getBlockByNumber(${number}) returned null for a block with logs`);
    const header = parseBlockHeader(answer.result, `eth_getBlockByNumber(${number})`);
    if (header.hash !== blocks.get(number))
      throw new RpcResponseError(`block ${number} has hash ${header.hash}, but its logs said ${blocks.get(number)}`);
    timestamps.set(number, header.timestamp);
  });
  return timestamps;
}
