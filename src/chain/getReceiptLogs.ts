import type { Hex } from "viem";
import type { ReceiptLog } from "../decode/userOperationLogs.js";
import { RpcResponseError } from "../errors/rpc.js";
import { BATCH_SIZE } from "./getTransactions.js";
import { inBatches } from "./inBatches.js";
import type { RpcClient } from "./rpcClient.js";
import { parseRpcLog } from "./rpcLog.js";

/**
 * The logs of the given transactions' receipts, by hash, in logIndex order, in JSON-RPC batches
 * (eth_getTransactionReceipt; BATCH_SIZE a request). Asked only for ERC-4337 bundles: one receipt
 * per bundle that emitted an indexed log costs less than the EntryPoint's logs of whole blocks
 * (eth_getLogs), which hold every other bundle of the block too, and it answers for a
 * pre-confirmed transaction as well, which has no block hash to ask eth_getLogs with. A
 * transaction the node has no receipt for (not yet executed, or dropped) is left out. Every log
 * is checked as a log of eth_getLogs is, and must belong to the transaction asked for (their order
 * is the mapping's to judge: decode/userOperationLogs.ts).
 */
export async function getReceiptLogs(client: RpcClient, hashes: readonly Hex[]): Promise<Map<Hex, ReceiptLog[]>> {
  const found = new Map<Hex, ReceiptLog[]>();
  await inBatches(client, hashes, BATCH_SIZE, async (chunk) => {
    const answers = await client.batch(chunk.map((hash) => ({ method: "eth_getTransactionReceipt", params: [hash] })));
    answers.forEach((answer, i) => {
      if (!answer.ok) throw answer.error;
      if (answer.result === null) return;
      const hash = chunk[i]!;
      found.set(hash, parseReceiptLogs(answer.result, hash));
    });
  });
  return found;
}

/** Checks one receipt: it is `hash`'s, and its logs are well-formed logs of that transaction in logIndex order. */
export function parseReceiptLogs(value: unknown, hash: Hex): ReceiptLog[] {
  const where = `eth_getTransactionReceipt(${hash})`;
  if (typeof value !== "object" || value === null) throw new RpcResponseError(`${where} is not a receipt object`);
  const receipt = value as Record<string, unknown>;
  if (typeof receipt.transactionHash !== "string" || receipt.transactionHash.toLowerCase() !== hash.toLowerCase())
    throw new RpcResponseError(`${where} answered the receipt of transaction ${String(receipt.transactionHash)}`);
  if (!Array.isArray(receipt.logs)) throw new RpcResponseError(`${where}.logs is not an array`);
  return receipt.logs.map((raw, i) => {
    const log = parseRpcLog(raw, `${where}.logs[${i}]`);
    if (log.transactionHash !== hash.toLowerCase()) throw new RpcResponseError(`${where}.logs[${i}] belongs to transaction ${log.transactionHash}`);
    return { address: log.address, topics: log.topics, data: log.data, logIndex: log.logIndex };
  });
}
