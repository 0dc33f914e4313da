import type { Hex } from "viem";
import { BATCH_SIZE, getTransactions } from "../chain/getTransactions.js";
import { inBatches } from "../chain/inBatches.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { getReceiptLogs } from "../chain/getReceiptLogs.js";
import {
  attributeTransaction,
  attributionLabels,
  DEFAULT_ENTRY_POINTS,
} from "../decode/attributeTransaction.js";
import { emptyAttribution } from "../rows/packedAttribution.js";
import { bundleRows } from "../decode/packAttribution.js";
import { mapBundleLogs, type BundleCall, type BundleLogs } from "../decode/userOperationLogs.js";
import type { WindowDecoder } from "../sync/historical/windowDecoder.js";
import {
  calldataRequest,
  type AttributedAnswer,
  type CalldataCall,
} from "../sync/historical/transactionsAnswer.js";
import { NUMBER_AT, NUMBER_FIELDS } from "../rows/packedRows.js";
import { RpcRequestError, RpcResponseError } from "../errors/rpc.js";
import type { Metrics } from "../ops/metrics.js";
import type { Store } from "../store/store.js";
import type { AttributedTransaction } from "../decode/attributeTransaction.js";
import type { OperationLogRows, PackedAttribution } from "../rows/packedAttribution.js";

/**
 * Transaction hashes remembered as attributed; past this the memory is cleared (the database still
 * knows). It saves the lookups of transactions seen again soon (a pre-confirmation, then its block):
 * a backfill's hashes are new, and 200,000 of them held about 30 MB for nothing.
 */
const SEEN_LIMIT = 20_000;

/**
 * Whole blocks per JSON-RPC batch: a Base block with its transactions runs to hundreds of KB, so
 * a batch of them stays well under rpc.maxResponseBytes.
 */
const BLOCKS_PER_BATCH = 50;

/**
 * Fetches and decodes the calldata of the transactions behind a batch of logs: only those not
 * attributed yet (memory, then the database), in one JSON-RPC batch per call. One per daemon: the
 * stages share its memory and each passes the client it reads with (the head path's has a timeout).
 */
export function createAttributor(deps: {
  metrics: Metrics;
  chainId: number;
  store: Pick<Store, "unattributed">;
  /** attribution.entryPoints (undefined: the known deployments). */
  entryPoints?: readonly Hex[] | undefined;
}) {
  const seen = new Set<Hex>();
  const entryPoints =
    deps.entryPoints?.map((address) => address.toLowerCase() as Hex) ?? DEFAULT_ENTRY_POINTS;
  /** Of these transactions, those not attributed yet, each once. */
  async function wanted(txHashes: Iterable<Hex>): Promise<Hex[]> {
    const unseen = [...new Set(txHashes)].filter((hash) => !seen.has(hash));
    return unseen.length === 0 ? [] : deps.store.unattributed(unseen);
  }
  return {
    async attribute(client: RpcClient, txHashes: Iterable<Hex>): Promise<AttributedTransaction[]> {
      const hashes = await wanted(txHashes);
      if (hashes.length === 0) return [];
      const found = await getTransactions(client, hashes);
      const decoded = [...found.values()].map((tx): AttributedTransaction => ({
        chainId: deps.chainId,
        tx,
        attribution: attributeTransaction(tx, entryPoints),
      }));
      const result = await withBundleLogs(client, decoded);
      for (const { attribution } of result)
        deps.metrics.attributions.inc(attributionLabels(attribution.attribution));
      return result;
    },
    /**
     * The same for a backfill window, at most one call per block (calldataCalls), with the answers'
     * bytes handed to `decoder` unparsed (the decode thread, in a long backfill, as the window's
     * logs are): it checks, attributes and packs them. What the answers must be, and what a damaged
     * one costs (the batch is asked again), is as for `attribute`. A backfill's transactions are not
     * remembered: no other window or stage asks for them again (a million of them cost the main
     * thread 0.6 s).
     */
    async attributeWindow(
      client: RpcClient,
      decoder: WindowDecoder,
      window: WindowTransactions,
    ): Promise<PackedAttribution> {
      const calls = calldataCalls(window, new Set(await wanted(window.txHashes)));
      const packed = emptyAttribution();
      const bundles: BundleCall[] = [];
      const send = async (batch: CalldataCall[]) => {
        const context = () => ({
          calls: batch,
          chainId: deps.chainId,
          now: Date.now(),
          entryPoints,
        });
        const thread = decoder.sender();
        const attributed = await client.batchRaw(
          batch.map(calldataRequest),
          async (answer) => accepted(await decoder.attribute({ ...answer, ...context() })),
          thread &&
            (async (request, signal) =>
              accepted(await thread.attribute(request, context(), signal))),
        );
        packed.batches.push(...attributed.attribution.batches);
        bundles.push(...attributed.bundles);
        for (const { result, schema, count } of attributed.tallies)
          deps.metrics.attributions.inc({ result, schema }, count);
      };
      await inBatches(client, calls.byHash, BATCH_SIZE, send);
      await inBatches(client, calls.byBlock, BLOCKS_PER_BATCH, send);
      if (bundles.length > 0) packed.operationLogs = await mapBundles(client, bundles);
      return packed;
    },
    /** Marks transactions as stored (after their commit). */
    remember(hashes: Iterable<Hex>): void {
      if (seen.size > SEEN_LIMIT) seen.clear();
      for (const hash of hashes) seen.add(hash);
    },
  };
}

export type Attributor = ReturnType<typeof createAttributor>;

/**
 * Which user operation each of a backfill window's bundles' logs belongs to, from its receipt (one
 * batch for all of them). A finalized bundle always has a receipt; one that has
 * none (a node that pruned it) is recorded unmapped, with the reason.
 */
async function mapBundles(
  client: RpcClient,
  bundles: readonly BundleCall[],
): Promise<OperationLogRows> {
  const receipts = await getReceiptLogs(
    client,
    bundles.map((b) => b.hash),
  );
  return bundleRows(
    bundles.map((b): [Hex, BundleLogs] => {
      const logs = receipts.get(b.hash);
      return [
        b.hash,
        logs === undefined
          ? { kind: "unmapped", reason: "the node had no receipt for the bundle" }
          : mapBundleLogs(logs, b.entryPoint, b.operations),
      ];
    }),
  );
}

/**
 * Adds to each bundle which user operation its logs belong to, from its receipt (one batch for all
 * of them). A bundle the node has no receipt for yet (a pre-confirmation it has not executed) is
 * left out, unattributed: it is asked again when its logs are seen again, in their block.
 */
async function withBundleLogs(
  client: RpcClient,
  transactions: AttributedTransaction[],
): Promise<AttributedTransaction[]> {
  const bundles = transactions.filter(
    (t) => t.attribution.userOperations !== undefined && t.tx.to !== null,
  );
  if (bundles.length === 0) return transactions;
  const receipts = await getReceiptLogs(
    client,
    bundles.map((t) => t.tx.hash),
  );
  return transactions.flatMap((t) => {
    const operations = t.attribution.userOperations;
    if (operations === undefined || t.tx.to === null) return [t];
    const logs = receipts.get(t.tx.hash);
    return logs === undefined
      ? []
      : [{ ...t, bundleLogs: mapBundleLogs(logs, t.tx.to, operations) }];
  });
}

/** What a backfill window (sync/fetchLogRows.ts's WindowRows) tells of its transactions: each row's, its block, and each block's hash. */
export type WindowTransactions = {
  rows: { numbers: Float64Array };
  txHashes: readonly Hex[];
  blocks: ReadonlyArray<readonly [number, Hex]>;
};

/**
 * How a window's wanted transactions are asked for: a block holding one of them by its hash, a
 * block holding more as the whole block (`eth_getBlockByNumber(n, true)`, every transaction's input
 * in one call). So a block costs at most one call, as a provider counts them in a batch, and the
 * full block (large on Base, with its transactions that move no token) is read only where it
 * saves calls.
 */
export function calldataCalls(
  window: WindowTransactions,
  wanted: ReadonlySet<Hex>,
): { byHash: CalldataCall[]; byBlock: CalldataCall[] } {
  const perBlock = new Map<number, Hex[]>();
  const placed = new Set<Hex>();
  const numbers = window.rows.numbers;
  window.txHashes.forEach((hash, row) => {
    if (!wanted.has(hash) || placed.has(hash)) return;
    placed.add(hash);
    const block = numbers[row * NUMBER_FIELDS + NUMBER_AT.blockNumber]!;
    const hashes = perBlock.get(block);
    if (hashes === undefined) perBlock.set(block, [hash]);
    else hashes.push(hash);
  });
  const blockHashes = new Map(window.blocks);
  const byHash: CalldataCall[] = [];
  const byBlock: CalldataCall[] = [];
  for (const [block, hashes] of perBlock) {
    if (hashes.length === 1) byHash.push({ hash: hashes[0]! });
    else byBlock.push({ block, blockHash: blockHashes.get(block)!, hashes });
  }
  return { byHash, byBlock };
}

/** An attributed answer, or the error that makes the client ask again (or give up). */
function accepted(result: AttributedAnswer): Extract<AttributedAnswer, { kind: "attributed" }> {
  if (result.kind === "nodeError") throw new RpcRequestError(result.method, result.error);
  if (result.kind === "damaged") throw new RpcResponseError(result.message);
  return result;
}
