import type { Hex } from "viem";
import type { BlockRange } from "../blockRanges.js";
import { checkAnswer, type LogFilter, type OutOfFilterReason } from "../chain/getLogs.js";
import { answerText, type AnswerBody } from "../chain/httpTransport.js";
import { nodeErrorOf, unwrap, type NodeError } from "../chain/jsonRpcAnswer.js";
import type { RpcLog } from "../chain/rpcLog.js";
import { RpcResponseError } from "../errors/rpc.js";
import { toLogRows } from "./logRow.js";
import { packRowsToMove, type PackedRows } from "./packedRows.js";
import { scanWindowAnswer } from "./scanWindowAnswer.js";
import type { UndecodableReason } from "./paymentEvents.js";

/** The body of one eth_getLogs answer for a backfill window (as received), with what decoding it needs. */
export type WindowAnswer = WindowContext & {
  body: AnswerBody;
  /** The request's JSON-RPC id, and the endpoint's redacted label (for messages). */
  id: number;
  endpoint: string;
};

/** What decoding a window's answer needs besides the answer. */
export type WindowContext = {
  filter: LogFilter & BlockRange;
  chainId: number;
  /** Blocks at or below this are stored as finalized, above it as confirmed. */
  finalized: number;
};

/** A log refused by the filter or the decoder: what the report of it names. */
export type RejectedLog = {
  log: Pick<RpcLog, "address" | "blockNumber" | "transactionHash" | "logIndex">;
  reason: OutOfFilterReason | UndecodableReason;
};

/** Stands in for the timestamp of a block whose logs carried none, until its header is fetched; never stored. */
export const UNKNOWN_TIMESTAMP = -1;

export type DecodedWindow =
  /** Every log checked and decoded; `rejected` ones (a strict caller refuses the answer) are not in `rows`. */
  | {
      kind: "rows";
      rows: PackedRows;
      /** The transaction of each row, in row order (attribution fetches their calldata). */
      txHashes: Hex[];
      /** Blocks whose logs carried no timestamp, with their hash: their rows hold UNKNOWN_TIMESTAMP. */
      untimed: Array<[number, Hex]>;
      rejected: RejectedLog[];
    }
  /** The node answered with a JSON-RPC error (a range limit, a rate limit…): the RPC client classifies it. */
  | { kind: "nodeError"; error: NodeError }
  /** Not a well-formed answer (bad JSON, wrong id, a malformed log, two hashes for one block): retried. */
  | { kind: "damaged"; message: string };

/**
 * Parses, checks, decodes and packs one window's answer: all of a backfill window's work between
 * the HTTP body and the writer. Pure (plain data in and out), so it runs on the decode thread
 * (windowDecoder.ts) or, for a short backfill, on the caller's.
 */
export function decodeWindowAnswer(answer: WindowAnswer): DecodedWindow {
  return scanWindowAnswer(answer) ?? decodeParsedWindowAnswer(answer);
}

/** The full path: JSON.parse, then each log checked, decoded and packed as every other path does (chain/, decode/). */
export function decodeParsedWindowAnswer(answer: WindowAnswer): DecodedWindow {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answerText(answer.body));
  } catch {
    return { kind: "damaged", message: `${answer.endpoint} answered with invalid JSON` };
  }
  const error = nodeErrorOf(parsed);
  if (error !== undefined) return { kind: "nodeError", error };
  try {
    const checked = checkAnswer(unwrap(parsed, "eth_getLogs", answer.id, answer.endpoint), answer.filter);
    const decoded = toLogRows(checked.logs, {
      chainId: answer.chainId,
      statusOf: (blockNumber) => (blockNumber <= answer.finalized ? "finalized" : "confirmed"),
      source: "backfill",
      timestampOf: () => UNKNOWN_TIMESTAMP,
    });
    const untimed = new Map<number, Hex>();
    for (const row of decoded.rows) if (row.blockTimestamp === UNKNOWN_TIMESTAMP) untimed.set(row.blockNumber, row.blockHash);
    const rejected = [...checked.outOfFilter, ...decoded.rejected].map(({ log, reason }) => ({
      log: { address: log.address, blockNumber: log.blockNumber, transactionHash: log.transactionHash, logIndex: log.logIndex },
      reason,
    }));
    return { kind: "rows", rows: packRowsToMove(decoded.rows), txHashes: decoded.rows.map((r) => r.transactionHash), untimed: [...untimed], rejected };
  } catch (error) {
    if (error instanceof RpcResponseError) return { kind: "damaged", message: error.message };
    throw error;
  }
}
