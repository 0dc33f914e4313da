import { decodePaymentEvent } from "./decodePaymentEvent.js";
import { assignTxLogPositions } from "./preconfirmedTwins.js";
import type { LogRow, LogSource, LogStatus, Rejection } from "../rows/logRow.js";
import type { RpcLog } from "../rows/rpcLog.js";

/**
 * Decodes the logs of one answer (whole blocks, or a whole pending view) into rows.
 * Undecodable logs are returned as rejections, never stored. `timestampOf` supplies the block
 * timestamp for nodes that omit `blockTimestamp`.
 */
export function toLogRows(
  logs: readonly RpcLog[],
  context: {
    chainId: number;
    statusOf: (blockNumber: number) => LogStatus;
    source: LogSource;
    timestampOf: (blockNumber: number) => number;
  },
): { rows: LogRow[]; rejected: Rejection[] } {
  const rows: LogRow[] = [];
  const rejected: Rejection[] = [];
  for (const log of logs) {
    const event = decodePaymentEvent(log.topics, log.data);
    if (typeof event === "string") {
      rejected.push({ log, reason: event });
      continue;
    }
    rows.push({
      address: log.address,
      topics: log.topics,
      data: log.data,
      blockNumber: log.blockNumber,
      blockHash: log.blockHash,
      transactionHash: log.transactionHash,
      transactionIndex: log.transactionIndex,
      logIndex: log.logIndex,
      chainId: context.chainId,
      blockTimestamp: log.blockTimestamp ?? context.timestampOf(log.blockNumber),
      txLogPosition: 0,
      event,
      status: context.statusOf(log.blockNumber),
      source: context.source,
    });
  }
  assignTxLogPositions(rows);
  return { rows, rejected };
}
