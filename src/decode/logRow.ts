import type { Hex } from "viem";
import type { RpcLog } from "../chain/rpcLog.js";
import { decodePaymentEvent, type PaymentEvent, type UndecodableReason } from "./paymentEvents.js";

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

/** Numbers each transaction's logs per token in logIndex order: the identity that survives pre-confirmation. */
function assignTxLogPositions(rows: LogRow[]): void {
  const next = new Map<string, number>();
  // Nodes answer in (block, logIndex) order; sort only when one did not.
  const inOrder = rows.every((row, i) => i === 0 || before(rows[i - 1]!, row));
  const ordered = inOrder ? rows : [...rows].sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  for (const row of ordered) {
    const key: `${Hex}${Hex}` = `${row.transactionHash}${row.address}`;
    const position = next.get(key) ?? 0;
    row.txLogPosition = position;
    next.set(key, position + 1);
  }
}

function before(a: LogRow, b: LogRow): boolean {
  return a.blockNumber < b.blockNumber || (a.blockNumber === b.blockNumber && a.logIndex < b.logIndex);
}
