import type { Hex } from "viem";
import { getTransactions } from "../chain/getTransactions.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { attributeTransaction } from "../decode/attributeTransaction.js";
import type { Metrics } from "../ops/metrics.js";
import type { AttributedTransaction } from "../store/attributionWriter.js";
import type { Store } from "../store/store.js";

/**
 * Transaction hashes remembered as attributed; past this the memory is cleared (the database still
 * knows). It saves the lookups of transactions seen again soon (a pre-confirmation, then its block):
 * a backfill's hashes are new, and 200,000 of them held about 30 MB for nothing.
 */
const SEEN_LIMIT = 20_000;

/**
 * Fetches and decodes the calldata of the transactions behind a batch of logs: only those not
 * attributed yet (memory, then the database), in one JSON-RPC batch per call. One per daemon: the
 * stages share its memory and each passes the client it reads with (the head path's has a timeout).
 */
export function createAttributor(deps: { metrics: Metrics; chainId: number; store: Pick<Store, "unattributed"> }) {
  const seen = new Set<Hex>();
  return {
    async attribute(client: RpcClient, txHashes: Iterable<Hex>): Promise<AttributedTransaction[]> {
      const unseen = [...new Set(txHashes)].filter((hash) => !seen.has(hash));
      const wanted = unseen.length === 0 ? [] : await deps.store.unattributed(unseen);
      if (wanted.length === 0) return [];
      const found = await getTransactions(client, wanted);
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
