import type { Hex } from "viem";
import { getBlockTimestamps } from "../chain/blockHeaders.js";
import type { BlockRange } from "../blockRanges.js";
import {
  getLogsParams,
  partitionByFilter,
  type GetLogsResult,
  type LogFilter,
} from "../chain/getLogs.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { DamagedAnswerError, RpcRequestError, RpcResponseError } from "../errors/rpc.js";
import type { RpcLog } from "../rows/rpcLog.js";
import { type LogRow, type LogSource, type LogStatus } from "../rows/logRow.js";
import { toLogRows } from "../decode/toLogRows.js";
import { NUMBER_FIELDS, packRowsToMove, type PackedRows } from "../rows/packedRows.js";
import { getSelectedLogs, isWatched, type LogSelection } from "./watchedLogs.js";
import type { WindowDecoder } from "./historical/windowDecoder.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import {
  type DecodedWindow,
  type RejectedLog,
  UNKNOWN_TIMESTAMP,
} from "../decode/decodedWindow.js";

export type FetchRowsDeps = {
  client: RpcClient;
  logger: Logger;
  metrics: Metrics;
  chainId: number;
};

export type RowsRequest = {
  statusOf: (blockNumber: number) => LogStatus;
  source: LogSource;
  /**
   * Unix seconds for logs that carry no `blockTimestamp`, where the caller knows it: a block's
   * header, or now for the pre-confirmed view. Blocks it leaves undefined have their timestamps fetched.
   */
  timestampOf?: ((blockNumber: number) => number | undefined) | undefined;
  /**
   * Canonical data is strict: one log that fails validation makes the whole answer damaged, and it is
   * fetched again (next endpoint first); a range is stored only from an answer in which every log passed.
   * The pre-confirmed view is lenient: a bad log is dropped and counted, the canonical block settles it later.
   */
  strict: boolean;
};

/**
 * How logs become rows (head blocks, the pre-confirmed view; backfill windows take fetchWindowRows below,
 * the same steps off this thread): eth_getLogs, the filter check, decoding, and the report of every
 * rejected log (a metric by reason and a warning), all inside the RPC client's retry loop.
 */
export async function fetchLogRows(
  deps: FetchRowsDeps,
  filter: LogSelection,
  request: RowsRequest,
): Promise<LogRow[]> {
  const untimed = new Set<number>();
  const rows = await getSelectedLogs(deps.client, filter, (answer) => {
    untimed.clear();
    return decodeAnswer(deps, filter, answer, request, untimed);
  });
  if (untimed.size === 0) return rows;
  const hashes = new Map<number, Hex>(
    rows.filter((r) => untimed.has(r.blockNumber)).map((r) => [r.blockNumber, r.blockHash]),
  );
  const timestamps = await getBlockTimestamps(deps.client, hashes);
  for (const row of rows)
    if (row.blockTimestamp === UNKNOWN_TIMESTAMP)
      row.blockTimestamp = timestamps.get(row.blockNumber)!;
  return rows;
}

/** A backfill window's rows, packed for the writer, the transaction of each, and each block with its hash. */
export type WindowRows = { rows: PackedRows; txHashes: Hex[]; blocks: Array<[number, Hex]> };

/**
 * fetchLogRows for a backfill window (always strict), with the answer's body parsed, checked,
 * decoded and packed by `decoder`. In a long backfill that is on the decode thread, which also
 * sends the request (the answer never reaches this thread; the client's retries, failover and rate
 * limit stay here). Blocks at or below `finalized` are stored as finalized. A watched selection
 * (several answers merged) is fetched and decoded on this thread, as fetchLogRows does.
 */
export async function fetchWindowRows(
  deps: FetchRowsDeps,
  decoder: WindowDecoder,
  filter: LogSelection & BlockRange,
  finalized: number,
): Promise<WindowRows> {
  // A watched selection takes several small answers, merged here (watchedLogs.ts): the decode thread's one-answer path does not apply.
  if (isWatched(filter)) {
    const rows = await fetchLogRows(deps, filter, {
      statusOf: (n) => (n <= finalized ? "finalized" : "confirmed"),
      source: "backfill",
      strict: true,
    });
    const blocks = [...new Map(rows.map((r) => [r.blockNumber, r.blockHash])).entries()];
    return { rows: packRowsToMove(rows), txHashes: rows.map((r) => r.transactionHash), blocks };
  }
  const window = { filter, chainId: deps.chainId, finalized };
  const accepted = (decoded: DecodedWindow) => {
    if (decoded.kind === "nodeError") throw new RpcRequestError("eth_getLogs", decoded.error);
    if (decoded.kind === "damaged") throw new RpcResponseError(decoded.message);
    if (decoded.rejected.length > 0) reportRejected(deps, filter, decoded.rejected, true);
    return decoded;
  };
  const thread = decoder.sender();
  const decoded = await deps.client.requestRaw(
    "eth_getLogs",
    getLogsParams(filter),
    async (answer) => accepted(await decoder.decode({ ...answer, ...window })),
    thread &&
      (async (request, signal, onLeft) =>
        accepted(await thread.decode(request, window, signal, onLeft))),
  );
  if (decoded.untimed.length > 0) {
    const timestamps = await getBlockTimestamps(deps.client, new Map(decoded.untimed));
    const numbers = decoded.rows.numbers;
    // Numbers per row: block number at 0, block timestamp at 1 (packedRows.ts).
    for (let k = 0; k < numbers.length; k += NUMBER_FIELDS)
      if (numbers[k + 1] === UNKNOWN_TIMESTAMP) numbers[k + 1] = timestamps.get(numbers[k]!)!;
  }
  return { rows: decoded.rows, txHashes: decoded.txHashes, blocks: decoded.blocks };
}

/** The same check, decoding and report for logs that arrived by subscription (always lenient, timestamp known). */
export function rowsOfNotification(
  deps: FetchRowsDeps,
  filter: LogFilter,
  logs: readonly RpcLog[],
  request: Omit<RowsRequest, "strict" | "timestampOf"> & {
    timestampOf: (blockNumber: number) => number;
  },
): LogRow[] {
  return decodeAnswer(
    deps,
    filter,
    partitionByFilter(logs, filter),
    { ...request, strict: false },
    new Set(),
  );
}

/** Decodes a checked answer; blocks whose logs lack a timestamp (and none was given) are added to `untimed`. */
function decodeAnswer(
  deps: FetchRowsDeps,
  filter: LogFilter,
  answer: GetLogsResult,
  request: RowsRequest,
  untimed: Set<number>,
): LogRow[] {
  const decoded = toLogRows(answer.logs, {
    chainId: deps.chainId,
    statusOf: request.statusOf,
    source: request.source,
    timestampOf: (blockNumber) => {
      const known = request.timestampOf?.(blockNumber);
      if (known !== undefined) return known;
      untimed.add(blockNumber);
      return UNKNOWN_TIMESTAMP;
    },
  });
  const rejected: RejectedLog[] = [...answer.outOfFilter, ...decoded.rejected];
  if (rejected.length > 0) reportRejected(deps, filter, rejected, request.strict);
  return decoded.rows;
}

/** Counts and logs rejected logs; in strict mode refuses the whole answer as damaged (retried by the client). */
function reportRejected(
  deps: FetchRowsDeps,
  filter: LogFilter,
  rejected: readonly RejectedLog[],
  strict: boolean,
): void {
  for (const { log, reason } of rejected) {
    deps.metrics.rpcRejectedLogs.inc({ reason });
    deps.logger.warn({
      msg: strict
        ? "Refused an answer holding a log that failed validation"
        : "Rejected a pre-confirmed log that failed validation",
      reason,
      scope: describeScope(filter),
      block_number: log.blockNumber,
      tx_hash: log.transactionHash,
      log_index: log.logIndex,
      address: log.address,
    });
  }
  if (!strict) return;
  const first = rejected[0]!;
  deps.metrics.rpcDamagedAnswers.inc({ scope: "blockHash" in filter ? "block" : "window" });
  throw new DamagedAnswerError(
    `eth_getLogs for ${describeScope(filter)} answered ${rejected.length} log(s) that failed validation (${first.reason}: block ${first.log.blockNumber}, tx ${first.log.transactionHash}, logIndex ${first.log.logIndex})`,
  );
}

/** "blocks 100..199", "block 120 (0xabc…)" or "the pre-confirmed view", for messages. */
export function describeScope(filter: LogFilter): string {
  if ("pending" in filter) return "the pending view";
  if ("blockHash" in filter) return `block ${filter.blockNumber} (${filter.blockHash})`;
  return `blocks ${filter.from}..${filter.to}`;
}
