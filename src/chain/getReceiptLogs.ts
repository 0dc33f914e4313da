import type { Hex } from "viem";
import type { ReceiptLog } from "../rows/receiptLog.js";
import { RpcResponseError } from "../errors/rpc.js";
import { BATCH_SIZE } from "./getTransactions.js";
import { answerText } from "./httpTransport.js";
import { inBatches } from "./inBatches.js";
import { batchResults } from "./jsonRpcAnswer.js";
import type { RpcClient } from "./rpcClient.js";
import { parseRpcLog } from "./rpcLog.js";

const METHOD = "eth_getTransactionReceipt";

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
export async function getReceiptLogs(
  client: RpcClient,
  hashes: readonly Hex[],
): Promise<Map<Hex, ReceiptLog[]>> {
  const found = new Map<Hex, ReceiptLog[]>();
  await inBatches(client, hashes, BATCH_SIZE, async (chunk) => {
    const calls = chunk.map((hash) => ({ method: METHOD, params: [hash] }));
    // Checked inside the client's retries: a damaged answer is asked again, as a window's logs are.
    const receipts = await client.batchRaw(calls, async (answer) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(answerText(answer.body));
      } catch {
        throw new RpcResponseError(`${answer.endpoint} answered ${METHOD} with invalid JSON`);
      }
      return batchResults(
        parsed,
        calls.map(() => METHOD),
        answer.firstId,
        answer.endpoint,
      ).map((result, i) => {
        if (!result.ok) throw result.error;
        return result.result === null ? undefined : parseReceiptLogs(result.result, chunk[i]!);
      });
    });
    receipts.forEach((logs, i) => logs !== undefined && found.set(chunk[i]!, logs));
  });
  return found;
}

/** Checks one receipt: it is `hash`'s, and its logs are well-formed logs of that transaction in logIndex order. */
export function parseReceiptLogs(value: unknown, hash: Hex): ReceiptLog[] {
  const where = `eth_getTransactionReceipt(${hash})`;
  if (typeof value !== "object" || value === null)
    throw new RpcResponseError(`${where} is not a receipt object`);
  const receipt = value as Record<string, unknown>;
  if (
    typeof receipt.transactionHash !== "string" ||
    receipt.transactionHash.toLowerCase() !== hash.toLowerCase()
  )
    throw new RpcResponseError(
      `${where} answered the receipt of transaction ${String(receipt.transactionHash)}`,
    );
  if (!Array.isArray(receipt.logs)) throw new RpcResponseError(`${where}.logs is not an array`);
  return receipt.logs.map((raw, i) => {
    const log = parseRpcLog(raw, `${where}.logs[${i}]`);
    if (log.transactionHash !== hash.toLowerCase())
      throw new RpcResponseError(
        `${where}.logs[${i}] belongs to transaction ${log.transactionHash}`,
      );
    return { address: log.address, topics: log.topics, data: log.data, logIndex: log.logIndex };
  });
}
