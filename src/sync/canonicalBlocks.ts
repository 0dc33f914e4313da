import type { Hex } from "viem";
import { parseBlockHeader, type BlockHeader } from "../chain/blockHeaders.js";
import { getLogs } from "../chain/getLogs.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { toLogRows, type LogRow, type LogStatus } from "../decode/logRow.js";
import { PAYMENT_TOPICS } from "../decode/paymentEvents.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";

/** Blocks per JSON-RPC batch when fetching headers. */
const HEADER_BATCH_SIZE = 100;

/** Headers of blocks `from..to` by number, in batches; each must exist. */
export async function getHeaders(client: RpcClient, from: number, to: number): Promise<BlockHeader[]> {
  const headers: BlockHeader[] = [];
  for (let start = from; start <= to; start += HEADER_BATCH_SIZE) {
    const end = Math.min(to, start + HEADER_BATCH_SIZE - 1);
    const calls = [];
    for (let n = start; n <= end; n++) calls.push({ method: "eth_getBlockByNumber", params: [`0x${n.toString(16)}`, false] });
    const answers = await client.batch(calls);
    answers.forEach((answer, i) => {
      if (!answer.ok) throw answer.error;
      headers.push(parseBlockHeader(answer.result, `eth_getBlockByNumber(${start + i})`));
    });
  }
  return headers;
}

/** The decoded logs of one canonical block, fetched by its hash so they cannot belong to a sibling. */
export async function getBlockRows(
  deps: { client: RpcClient; logger: Logger; metrics: Metrics; chainId: number; tokens: readonly Hex[] },
  block: BlockHeader,
  status: LogStatus,
): Promise<LogRow[]> {
  const tokens = deps.tokens;
  if (tokens.length === 0) return [];
  const { logs, outOfFilter } = await getLogs(deps.client, { blockHash: block.hash, blockNumber: block.number, addresses: tokens, topic0: PAYMENT_TOPICS });
  for (const { reason } of outOfFilter) deps.metrics.rpcRejectedLogs.inc({ reason });
  const { rows, rejected } = toLogRows(logs, {
    chainId: deps.chainId,
    statusOf: () => status,
    source: "head",
    timestampOf: () => block.timestamp,
  });
  for (const { log, reason } of rejected) {
    deps.metrics.rpcRejectedLogs.inc({ reason });
    deps.logger.warn({ msg: "Rejected undecodable log", reason, block_number: log.blockNumber, tx_hash: log.transactionHash });
  }
  return rows;
}
