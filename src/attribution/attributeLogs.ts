import type { Hex } from "viem";
import { getTransactions } from "../chain/getTransactions.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { attributeTransaction } from "../decode/attributeTransaction.js";
import type { Metrics } from "../ops/metrics.js";
import type { AttributedTransaction, AttributionWriter } from "../store/attributionWriter.js";

/** Transaction hashes remembered as attributed; past this the memory is cleared (the database still knows). */
const SEEN_LIMIT = 200_000;

/**
 * Fetches and decodes the calldata of the transactions behind a batch of logs: only those not
 * attributed yet (memory, then the database), in one JSON-RPC batch per call.
 */
export function createAttributor(deps: { client: RpcClient; metrics: Metrics; chainId: number; writer: AttributionWriter }) {
  const seen = new Set<Hex>();
  return {
    async attribute(txHashes: Iterable<Hex>): Promise<AttributedTransaction[]> {
      const wanted = [...new Set(txHashes)].filter((hash) => !seen.has(hash) && !deps.writer.has(hash));
      if (wanted.length === 0) return [];
      const found = await getTransactions(deps.client, wanted);
      const result: AttributedTransaction[] = [];
      for (const tx of found.values()) {
        const attribution = attributeTransaction(tx);
        const own = attribution.attribution;
        deps.metrics.attributions.inc({ result: own.kind, schema: "schemaId" in own && own.schemaId !== undefined ? String(own.schemaId) : "none" });
        result.push({ chainId: deps.chainId, tx, attribution });
      }
      return result;
    },
    /** Marks transactions as stored (after their commit). */
    remember(transactions: readonly AttributedTransaction[]): void {
      if (seen.size > SEEN_LIMIT) seen.clear();
      for (const { tx } of transactions) seen.add(tx.hash);
    },
  };
}

export type Attributor = ReturnType<typeof createAttributor>;
