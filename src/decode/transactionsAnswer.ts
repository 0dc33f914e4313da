import type { Hex } from "viem";
import { parseTransaction, type TransactionInput } from "../chain/getTransactions.js";
import { answerText, type AnswerBody } from "../chain/httpTransport.js";
import { batchResults, type NodeError } from "../chain/jsonRpcAnswer.js";
import { RpcRequestError, RpcResponseError } from "../errors/rpc.js";
import { attributeTransaction, attributionLabels } from "./attributeTransaction.js";
import type { AttributedTransaction, PackedAttribution } from "../store/types.js";
import { packAttribution } from "./packedAttribution.js";
import type { BundleCall } from "./userOperationLogs.js";

/** The body of one eth_getTransactionByHash batch answer (as received), with what attributing it needs. */
export type TransactionsAnswer = TransactionsContext & {
  body: AnswerBody;
  /** The batch's first id (call i has firstId + i), and the endpoint's redacted label. */
  firstId: number;
  endpoint: string;
};

/** What attributing a batch's answer needs besides the answer. */
export type TransactionsContext = {
  /** The hash each call asked for. */
  hashes: readonly Hex[];
  chainId: number;
  /** fetched_at of the rows. */
  now: number;
  /** The EntryPoints (lowercase) whose calls are read as bundles; undefined: the known deployments. */
  entryPoints?: readonly Hex[] | undefined;
};

/** How many transactions came out with each attribution kind and schema: flashindex_attribution_transactions_total's labels. */
export type AttributionTally = { result: string; schema: string; count: number };

export type AttributedAnswer =
  /** Every transaction the node knows, attributed and packed for the writer; a hash it does not know (a dropped pre-confirmation) is left out. */
  | { kind: "attributed"; attribution: PackedAttribution; tallies: AttributionTally[]; bundles: BundleCall[] }
  /** The node answered the batch, or a call of it, with an error: the RPC client classifies it. */
  | { kind: "nodeError"; method: string; error: NodeError }
  /** Not a well-formed answer (bad JSON, a missing call, a malformed or other transaction): retried. */
  | { kind: "damaged"; message: string };

const METHOD = "eth_getTransactionByHash";

/**
 * Parses, checks, attributes (ERC-8021, ERC-4337 bundles) and packs one batch of transactions: all
 * of a backfill window's attribution work between the HTTP body and the writer. Pure (plain data
 * in and out), so it runs on the decode thread (windowDecoder.ts) as a window's logs do. The checks
 * are the RPC client's batch checks and getTransactions' (chain/).
 */
export function attributeTransactionsAnswer(answer: TransactionsAnswer): AttributedAnswer {
  const found = parseTransactionsAnswer(answer);
  if (!Array.isArray(found)) return found;
  const transactions = found.map((tx): AttributedTransaction => ({ chainId: answer.chainId, tx, attribution: attributeTransaction(tx, answer.entryPoints) }));
  const bundles = transactions.flatMap(({ tx, attribution }): BundleCall[] =>
    attribution.userOperations === undefined || tx.to === null ? [] : [{ hash: tx.hash, entryPoint: tx.to, operations: attribution.userOperations }],
  );
  return { kind: "attributed", attribution: packAttribution(transactions, answer.now), tallies: tally(transactions), bundles };
}

/**
 * JSON.parse, then the RPC client's batch checks and getTransactions' (chain/). A byte scanner (as
 * for the logs: scanWindowAnswer.ts) was tried and dropped: on these small objects it took as long
 * as JSON.parse and the checks (`attribution-on-decode-thread` in
 * scripts/bench/results/measurements.csv).
 */
function parseTransactionsAnswer(answer: TransactionsAnswer): TransactionInput[] | Exclude<AttributedAnswer, { kind: "attributed" }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answerText(answer.body));
  } catch {
    return { kind: "damaged", message: `${answer.endpoint} answered with invalid JSON` };
  }
  const found: TransactionInput[] = [];
  try {
    const results = batchResults(parsed, answer.hashes.map(() => METHOD), answer.firstId, answer.endpoint);
    results.forEach((result, i) => {
      if (!result.ok) throw result.error;
      if (result.result === null) return;
      const asked = answer.hashes[i]!;
      const tx = parseTransaction(result.result, `${METHOD}(${asked})`);
      if (tx.hash !== asked) throw new RpcResponseError(`${METHOD}(${asked}) answered transaction ${tx.hash}`);
      found.push(tx);
    });
  } catch (error) {
    if (error instanceof RpcRequestError) return { kind: "nodeError", method: error.method, error: error.nodeError as NodeError };
    if (error instanceof RpcResponseError) return { kind: "damaged", message: error.message };
    throw error;
  }
  return found;
}

function tally(transactions: readonly AttributedTransaction[]): AttributionTally[] {
  const counts = new Map<string, AttributionTally>();
  for (const { attribution } of transactions) {
    const { result, schema } = attributionLabels(attribution.attribution);
    const key = `${result}/${schema}`;
    const entry = counts.get(key);
    if (entry === undefined) counts.set(key, { result, schema, count: 1 });
    else entry.count++;
  }
  return [...counts.values()];
}
