import type { RpcLog } from "./rpcLog.js";
import { type PaymentEvent, type UndecodableReason } from "./paymentEvents.js";
import { decodePaymentEvent } from "../decode/decodePaymentEvent.js";
import { assignTxLogPositions } from "../decode/preconfirmedTwins.js";

export type LogStatus = "preconfirmed" | "confirmed" | "finalized" | "removed" | "dropped";
export type LogSource = "backfill" | "head" | "pending" | "pending_ws";

/** One decoded log ready for the store. */
export type LogRow = Omit<RpcLog, "blockTimestamp" | "removed"> & {
  chainId: number;
  blockTimestamp: number;
  /** Position among the indexed logs of the same token in this transaction (0-based). */
  txLogPosition: number;
  event: PaymentEvent;
  status: LogStatus;
  source: LogSource;
};

export type Rejection = { log: RpcLog; reason: UndecodableReason };

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
