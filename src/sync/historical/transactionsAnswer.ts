import type { Hex } from "viem";
import { parseTransaction } from "../../chain/getTransactions.js";
import type { TransactionInput } from "../../rows/transactionInput.js";
import { answerText, type AnswerBody } from "../../chain/httpTransport.js";
import { batchResults, type NodeError } from "../../chain/jsonRpcAnswer.js";
import { RpcRequestError, RpcResponseError } from "../../errors/rpc.js";
import { attributeTransaction, attributionLabels } from "../../decode/attributeTransaction.js";
import type { AttributedTransaction } from "../../decode/attributeTransaction.js";
import type { PackedAttribution } from "../../rows/packedAttribution.js";
import { packAttribution } from "../../decode/packAttribution.js";
import type { BundleCall } from "../../decode/userOperationLogs.js";

/**
 * One call of a calldata batch: a transaction by hash, or a whole block (`eth_getBlockByNumber(n, true)`)
 * for the wanted transactions it holds. The block's hash must be the one its logs carried.
 */
export type CalldataCall =
  { hash: Hex } | { block: number; blockHash: Hex; hashes: readonly Hex[] };

/** The JSON-RPC call a CalldataCall is sent as. */
export function calldataRequest(call: CalldataCall): { method: string; params: unknown[] } {
  return "hash" in call
    ? { method: BY_HASH, params: [call.hash] }
    : { method: BY_BLOCK, params: [`0x${call.block.toString(16)}`, true] };
}

/** The body of one calldata batch answer (as received), with what attributing it needs. */
export type TransactionsAnswer = TransactionsContext & {
  body: AnswerBody;
  /** The batch's first id (call i has firstId + i), and the endpoint's redacted label. */
  firstId: number;
  endpoint: string;
};

/** What attributing a batch's answer needs besides the answer. */
export type TransactionsContext = {
  /** What each call of the batch asked for. */
  calls: readonly CalldataCall[];
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
  | {
      kind: "attributed";
      attribution: PackedAttribution;
      tallies: AttributionTally[];
      bundles: BundleCall[];
    }
  /** The node answered the batch, or a call of it, with an error: the RPC client classifies it. */
  | { kind: "nodeError"; method: string; error: NodeError }
  /** Not a well-formed answer (bad JSON, a missing call, a malformed or other transaction): retried. */
  | { kind: "damaged"; message: string };

const BY_HASH = "eth_getTransactionByHash";
const BY_BLOCK = "eth_getBlockByNumber";

/**
 * Parses, checks, attributes (ERC-8021, ERC-4337 bundles) and packs one batch of transactions: all
 * of a backfill window's attribution work between the HTTP body and the writer. Pure (plain data
 * in and out), so it runs on the decode thread (windowDecoder.ts) as a window's logs do. The checks
 * are the RPC client's batch checks and getTransactions' (chain/).
 */
export function attributeTransactionsAnswer(answer: TransactionsAnswer): AttributedAnswer {
  const found = parseTransactionsAnswer(answer);
  if (!Array.isArray(found)) return found;
  const transactions = found.map((tx): AttributedTransaction => ({
    chainId: answer.chainId,
    tx,
    attribution: attributeTransaction(tx, answer.entryPoints),
  }));
  const bundles = transactions.flatMap(({ tx, attribution }): BundleCall[] =>
    attribution.userOperations === undefined || tx.to === null
      ? []
      : [{ hash: tx.hash, entryPoint: tx.to, operations: attribution.userOperations }],
  );
  return {
    kind: "attributed",
    attribution: packAttribution(transactions, answer.now),
    tallies: tally(transactions),
    bundles,
  };
}

/**
 * JSON.parse, then the RPC client's batch checks and getTransactions' (chain/). A byte scanner (as
 * for the logs: scanWindowAnswer.ts) was tried and dropped: on these small objects it took as long
 * as JSON.parse and the checks (`attribution-on-decode-thread` in
 * scripts/bench/results/measurements.csv).
 */
function parseTransactionsAnswer(
  answer: TransactionsAnswer,
): TransactionInput[] | Exclude<AttributedAnswer, { kind: "attributed" }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answerText(answer.body));
  } catch {
    return { kind: "damaged", message: `${answer.endpoint} answered with invalid JSON` };
  }
  const found: TransactionInput[] = [];
  try {
    const results = batchResults(
      parsed,
      answer.calls.map((call) => calldataRequest(call).method),
      answer.firstId,
      answer.endpoint,
    );
    results.forEach((result, i) => {
      if (!result.ok) throw result.error;
      const call = answer.calls[i]!;
      if (!("hash" in call)) {
        found.push(...blockTransactions(result.result, call));
        return;
      }
      if (result.result === null) return;
      const tx = parseTransaction(result.result, `${BY_HASH}(${call.hash})`);
      if (tx.hash !== call.hash)
        throw new RpcResponseError(`${BY_HASH}(${call.hash}) answered transaction ${tx.hash}`);
      found.push(tx);
    });
  } catch (error) {
    if (error instanceof RpcRequestError)
      return { kind: "nodeError", method: error.method, error: error.nodeError as NodeError };
    if (error instanceof RpcResponseError) return { kind: "damaged", message: error.message };
    throw error;
  }
  return found;
}

/**
 * The wanted transactions of an eth_getBlockByNumber(n, true) result, checked: the block must be the
 * one the logs came from (number and hash) and hold every wanted transaction, else the answer is
 * damaged and asked again. The block's other transactions are not checked: nothing of them is kept.
 */
function blockTransactions(
  value: unknown,
  call: Extract<CalldataCall, { block: number }>,
): TransactionInput[] {
  const where = `${BY_BLOCK}(${call.block})`;
  if (value === null) throw new RpcResponseError(`${where} answered no block`);
  if (
    typeof value !== "object" ||
    !Array.isArray((value as { transactions?: unknown }).transactions)
  ) {
    throw new RpcResponseError(`${where} is not a block with its transactions`);
  }
  const block = value as { hash?: unknown; number?: unknown; transactions: unknown[] };
  if (typeof block.number !== "string" || Number(block.number) !== call.block)
    throw new RpcResponseError(`${where} answered block ${String(block.number)}`);
  if (typeof block.hash !== "string" || block.hash.toLowerCase() !== call.blockHash) {
    throw new RpcResponseError(
      `${where} answered block hash ${String(block.hash)}, its logs carried ${call.blockHash}`,
    );
  }
  const wanted = new Set(call.hashes);
  const found: TransactionInput[] = [];
  block.transactions.forEach((item, index) => {
    const hash =
      typeof item === "object" && item !== null ? (item as { hash?: unknown }).hash : undefined;
    if (typeof hash !== "string" || !wanted.has(hash.toLowerCase() as Hex)) return;
    const tx = parseTransaction(item, `${where}.transactions[${index}]`);
    wanted.delete(tx.hash);
    found.push(tx);
  });
  const missing = wanted.values().next();
  if (!missing.done)
    throw new RpcResponseError(`${where} lacks transaction ${missing.value}, which its logs name`);
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
