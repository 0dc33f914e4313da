import type { Hex } from "viem";
import { RpcResponseError } from "../errors/rpc.js";
import type { TransactionInput } from "../rows/transactionInput.js";
import { ADDRESS, HEX_BYTES, WORD, type HexPattern } from "./hexPatterns.js";
import { inBatches } from "./inBatches.js";
import type { RpcClient } from "./rpcClient.js";

/** Transactions per JSON-RPC batch: one HTTP request carries a whole window's worth. */
export const BATCH_SIZE = 500;

/**
 * The calldata of the given transactions, by hash, in JSON-RPC batches (one HTTP request per
 * BATCH_SIZE transactions, so never more than one request per block, unless the provider's rate
 * limit allows fewer calls a second). A transaction the node
 * does not know (a dropped pre-confirmation) is left out.
 */
export async function getTransactions(
  client: RpcClient,
  hashes: readonly Hex[],
): Promise<Map<Hex, TransactionInput>> {
  const found = new Map<Hex, TransactionInput>();
  await inBatches(client, hashes, BATCH_SIZE, async (chunk) => {
    const answers = await client.batch(
      chunk.map((hash) => ({ method: "eth_getTransactionByHash", params: [hash] })),
    );
    answers.forEach((answer, i) => {
      if (!answer.ok) throw answer.error;
      if (answer.result === null) return;
      const tx = parseTransaction(answer.result, `eth_getTransactionByHash(${chunk[i]})`);
      if (tx.hash !== chunk[i])
        throw new RpcResponseError(
          `eth_getTransactionByHash(${chunk[i]}) answered transaction ${tx.hash}`,
        );
      found.set(tx.hash, tx);
    });
  });
  return found;
}

/** Checks one eth_getTransactionByHash result and keeps what attribution needs, in lower case. */
export function parseTransaction(value: unknown, where: string): TransactionInput {
  if (typeof value !== "object" || value === null)
    throw new RpcResponseError(`${where} is not a transaction object`);
  const tx = value as Record<string, unknown>;
  const field = (key: string, pattern: HexPattern): Hex => {
    const v = tx[key];
    if (typeof v !== "string" || !pattern.test(v))
      throw new RpcResponseError(`${where}.${key} is malformed`);
    return v.toLowerCase() as Hex;
  };
  return {
    hash: field("hash", WORD),
    from: field("from", ADDRESS),
    to: tx.to === null || tx.to === undefined ? null : field("to", ADDRESS),
    input: field("input", HEX_BYTES),
  };
}
