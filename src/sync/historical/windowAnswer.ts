import type { Hex } from "viem";
import { checkAnswer } from "../../chain/getLogs.js";
import { answerText } from "../../chain/httpTransport.js";
import { nodeErrorOf, unwrap } from "../../chain/jsonRpcAnswer.js";
import { RpcResponseError } from "../../errors/rpc.js";
import {
  UNKNOWN_TIMESTAMP,
  type DecodedWindow,
  type WindowAnswer,
} from "../../decode/decodedWindow.js";
import { toLogRows } from "../../decode/toLogRows.js";
import { packRowsToMove } from "../../rows/packedRows.js";
import { scanWindowAnswer } from "../../decode/scanWindowAnswer.js";

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
    const checked = checkAnswer(
      unwrap(parsed, "eth_getLogs", answer.id, answer.endpoint),
      answer.filter,
    );
    const decoded = toLogRows(checked.logs, {
      chainId: answer.chainId,
      statusOf: (blockNumber) => (blockNumber <= answer.finalized ? "finalized" : "confirmed"),
      source: "backfill",
      timestampOf: () => UNKNOWN_TIMESTAMP,
    });
    const untimed = new Map<number, Hex>();
    for (const row of decoded.rows)
      if (row.blockTimestamp === UNKNOWN_TIMESTAMP) untimed.set(row.blockNumber, row.blockHash);
    const rejected = [...checked.outOfFilter, ...decoded.rejected].map(({ log, reason }) => ({
      log: {
        address: log.address,
        blockNumber: log.blockNumber,
        transactionHash: log.transactionHash,
        logIndex: log.logIndex,
      },
      reason,
    }));
    const blocks = new Map<number, Hex>(decoded.rows.map((r) => [r.blockNumber, r.blockHash]));
    const txHashes = decoded.rows.map((r) => r.transactionHash);
    return {
      kind: "rows",
      rows: packRowsToMove(decoded.rows),
      txHashes,
      blocks: [...blocks],
      untimed: [...untimed],
      rejected,
    };
  } catch (error) {
    if (error instanceof RpcResponseError) return { kind: "damaged", message: error.message };
    throw error;
  }
}
