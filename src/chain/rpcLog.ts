import type { Hex } from "viem";
import { RpcResponseError } from "../errors/rpc.js";
import type { RpcLog } from "../rows/rpcLog.js";
import { ADDRESS, HEX_BYTES, WORD, type HexPattern } from "./hexPatterns.js";

const QUANTITY = /^0x[0-9a-fA-F]{1,13}$/;

/**
 * Checks one log object of an RPC answer field by field; throws RpcResponseError naming the field.
 * A provider can answer garbage: nothing reaches the store without passing here.
 */
export function parseRpcLog(value: unknown, where: string): RpcLog {
  if (typeof value !== "object" || value === null)
    throw new RpcResponseError(`${where} is not an object`);
  const log = value as Record<string, unknown>;
  const topics = log.topics;
  if (!Array.isArray(topics) || topics.length > 4)
    throw new RpcResponseError(`${where}.topics is not an array of 0 to 4 topics`);
  return {
    address: hexField(log, "address", ADDRESS, where),
    topics: topics.map((topic, i) => hexString(topic, WORD, `${where}.topics[${i}]`)),
    data: hexField(log, "data", HEX_BYTES, where),
    blockNumber: quantity(log.blockNumber, `${where}.blockNumber`),
    blockHash: hexField(log, "blockHash", WORD, where),
    blockTimestamp:
      log.blockTimestamp === undefined || log.blockTimestamp === null
        ? undefined
        : quantity(log.blockTimestamp, `${where}.blockTimestamp`),
    transactionHash: hexField(log, "transactionHash", WORD, where),
    transactionIndex: quantity(log.transactionIndex, `${where}.transactionIndex`),
    logIndex: quantity(log.logIndex, `${where}.logIndex`),
    removed: booleanField(log.removed, `${where}.removed`),
  };
}

function hexField(
  log: Record<string, unknown>,
  key: string,
  pattern: HexPattern,
  where: string,
): Hex {
  return hexString(log[key], pattern, `${where}.${key}`);
}

function hexString(value: unknown, pattern: HexPattern, path: string): Hex {
  if (typeof value !== "string" || !pattern.test(value))
    throw new RpcResponseError(`${path} is malformed hex`);
  return value.toLowerCase() as Hex;
}

/** A hex quantity that fits a JS number exactly (block numbers, indexes, timestamps). */
export function quantity(value: unknown, path: string): number {
  if (typeof value !== "string" || !QUANTITY.test(value))
    throw new RpcResponseError(`${path} is not a hex quantity`);
  return Number.parseInt(value.slice(2), 16);
}

function booleanField(value: unknown, path: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") throw new RpcResponseError(`${path} is not a boolean`);
  return value;
}
