import type { Hex } from "viem";
import type { ReceiptLog } from "../rows/receiptLog.js";
import { RpcResponseError } from "../errors/rpc.js";
import { parseReceiptLogs } from "./getReceiptLogs.js";
import type { RpcClient } from "./rpcClient.js";
import { WORD as HASH } from "./hexPatterns.js";

/** The fields of a transaction receipt flashindex reads; block number and gas as bigint. */
export type TransactionReceiptSummary = {
  transactionHash: Hex;
  blockHash: Hex;
  blockNumber: bigint;
  status: "success" | "reverted";
  gasUsed: bigint;
  /** Wei per gas paid (base fee + tip); null when a node's receipt omits it (pre-London nodes do). */
  effectiveGasPrice: bigint | null;
  /**
   * True for a receipt of a transaction that is only pre-confirmed: its block does not exist yet.
   * Note: a Base node with Flashblocks answers eth_getTransactionReceipt for such a transaction
   * with a zero blockHash and the pending block's number, before the block exists.
   */
  preconfirmed: boolean;
  /** The transaction's logs, each checked as a log of eth_getLogs is (lower-case hex). */
  logs: ReceiptLog[];
};

const ZERO_BLOCK_HASH = `0x${"0".repeat(64)}`;
const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;

/** eth_getTransactionReceipt, validated; null while the node knows no receipt. */
export async function getTransactionReceipt(
  client: RpcClient,
  hash: Hex,
): Promise<TransactionReceiptSummary | null> {
  return client.request("eth_getTransactionReceipt", [hash], (result) =>
    parseReceipt(result, hash),
  );
}

/**
 * Checks one eth_getTransactionReceipt answer field by field (a node can answer garbage): it is
 * `hash`'s, its block, status and gas are well-formed, and every log is a well-formed log of
 * this transaction in this receipt's block. Throws RpcResponseError naming what is wrong.
 */
export function parseReceipt(result: unknown, hash: Hex): TransactionReceiptSummary | null {
  if (result === null) return null;
  const r = result as Record<string, unknown> | undefined;
  if (typeof r !== "object" || r === null)
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned ${JSON.stringify(result)}`,
    );
  const { transactionHash, blockHash, blockNumber, status, gasUsed, effectiveGasPrice } = r;
  if (typeof transactionHash !== "string" || transactionHash.toLowerCase() !== hash.toLowerCase())
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned the receipt of ${String(transactionHash)}`,
    );
  if (
    typeof blockHash !== "string" ||
    !HASH.test(blockHash) ||
    typeof blockNumber !== "string" ||
    !QUANTITY.test(blockNumber)
  )
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned a receipt without a block hash or number`,
    );
  if (status !== "0x1" && status !== "0x0")
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned status ${JSON.stringify(status)}`,
    );
  if (typeof gasUsed !== "string" || !QUANTITY.test(gasUsed))
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned gasUsed ${JSON.stringify(gasUsed)}`,
    );
  if (
    effectiveGasPrice !== undefined &&
    effectiveGasPrice !== null &&
    (typeof effectiveGasPrice !== "string" || !QUANTITY.test(effectiveGasPrice))
  )
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned effectiveGasPrice ${JSON.stringify(effectiveGasPrice)}`,
    );
  const logs = parseReceiptLogs(r, hash);
  // A reverted transaction emits nothing: logs on one are a node's garbage, not events.
  if (status === "0x0" && logs.length > 0)
    throw new RpcResponseError(
      `eth_getTransactionReceipt(${hash}) returned a reverted receipt with ${logs.length} log(s)`,
    );
  (r.logs as Array<Record<string, unknown>>).forEach((log, i) => {
    if (typeof log.blockNumber !== "string" || BigInt(log.blockNumber) !== BigInt(blockNumber))
      throw new RpcResponseError(
        `eth_getTransactionReceipt(${hash}).logs[${i}] is in block ${String(log.blockNumber)}, not ${blockNumber}`,
      );
  });
  return {
    transactionHash: hash,
    blockHash: blockHash.toLowerCase() as Hex,
    blockNumber: BigInt(blockNumber),
    status: status === "0x1" ? "success" : "reverted",
    gasUsed: BigInt(gasUsed),
    effectiveGasPrice: typeof effectiveGasPrice === "string" ? BigInt(effectiveGasPrice) : null,
    preconfirmed: blockHash === ZERO_BLOCK_HASH,
    logs,
  };
}
