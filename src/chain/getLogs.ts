import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Hex } from "viem";
import { RpcResponseError } from "../errors/rpc.js";
import { parseRpcLog } from "./rpcLog.js";
import { PRECONFIRMED_BLOCK_HASH, type RpcLog } from "../rows/rpcLog.js";
import type { RpcClient } from "./rpcClient.js";
import type { BlockRange } from "../blockRanges.js";

/** Which logs: a range of canonical blocks, one block by hash, or the pre-confirmed ("pending") view. */
export type LogScope = BlockRange | { blockHash: Hex; blockNumber: number } | { pending: true };

export type LogFilter = LogScope & {
  /** Lower-case token addresses. */
  addresses: readonly Hex[];
  /** Accepted topic0 values (lower-case). */
  topic0: readonly Hex[];
  /** Accepted topic1 / topic2 values (lower-case 32-byte words); absent: any. Positions are ANDed, values within one ORed. */
  topic1?: readonly Hex[] | undefined;
  topic2?: readonly Hex[] | undefined;
};

export type OutOfFilterReason =
  "outside_range" | "unrequested_address" | "unrequested_topic" | "removed_flag";

export type GetLogsResult = {
  logs: RpcLog[];
  /** Logs the provider sent that the filter excludes: counted and logged by the caller, never stored. */
  outOfFilter: Array<{ log: RpcLog; reason: OutOfFilterReason }>;
};

const toHex = (n: number): Hex => `0x${n.toString(16)}`;

/**
 * eth_getLogs with every answer checked: a malformed answer or one that mixes two hashes for one
 * block is retried (RpcResponseError); logs outside the filter are set apart. `accept` runs on the
 * checked answer inside the retry loop: whatever it throws as RpcResponseError (a damaged answer)
 * is retried on the next endpoint like a failed request.
 */
export async function getLogs<T = GetLogsResult>(
  client: RpcClient,
  filter: LogFilter,
  accept: (answer: GetLogsResult) => T = (answer) => answer as T,
): Promise<T> {
  return client.request("eth_getLogs", getLogsParams(filter), async (result) => {
    const checked = checkAnswer(result, filter);
    // Checking and decoding a large answer each hold the thread for milliseconds: messages received
    // in between (a pre-confirmation, a new head) are handled first.
    await yieldToEventLoop();
    return accept(checked);
  });
}

/** eth_getLogs's parameters for a filter. */
export function getLogsParams(filter: LogFilter): unknown[] {
  const scope =
    "pending" in filter
      ? { fromBlock: "pending", toBlock: "pending" }
      : "blockHash" in filter
        ? { blockHash: filter.blockHash }
        : { fromBlock: toHex(filter.from), toBlock: toHex(filter.to) };
  return [{ ...scope, address: filter.addresses, topics: topicsOf(filter) }];
}

/** A filter's `topics` as eth_getLogs and eth_subscribe take them: null for any, no trailing null. */
export function topicsOf(
  filter: Pick<LogFilter, "topic0" | "topic1" | "topic2">,
): Array<readonly Hex[] | null> {
  if (filter.topic2 !== undefined) return [filter.topic0, filter.topic1 ?? null, filter.topic2];
  if (filter.topic1 !== undefined) return [filter.topic0, filter.topic1];
  return [filter.topic0];
}

/**
 * Shape-checks an answer's logs and sets apart those outside the filter. RpcResponseError (a damaged
 * answer, retried) when a log is malformed, when two hashes appear for one block, and, for canonical
 * blocks, when a log carries the pre-confirmed zero hash (a Flashblocks node's pending view leaking in:
 * not yet sealed, it would be stored as confirmed) or two logs share a (blockNumber, logIndex) (the
 * unique key holds the transaction hash too, so both would be stored).
 */
export function checkAnswer(result: unknown, filter: LogFilter): GetLogsResult {
  if (!Array.isArray(result))
    throw new RpcResponseError("eth_getLogs answered with a non-array result");
  const parsed = result.map((item, i) => parseRpcLog(item, `eth_getLogs result[${i}]`));
  const { logs, outOfFilter } = partitionByFilter(parsed, filter);
  checkConsistent(logs, filter);
  return { logs, outOfFilter };
}

/**
 * The checks of checkAnswer that span logs (one hash per block; for canonical blocks no zero hash
 * and no position twice), for logs gathered from several answers too.
 */
export function checkConsistent(logs: readonly RpcLog[], scope: LogScope): void {
  const canonical = !("pending" in scope);
  const blockHashes = new Map<number, Hex>();
  const positions = new Set<string>();
  for (const log of logs) {
    const known = blockHashes.get(log.blockNumber);
    if (known === undefined) {
      if (canonical && log.blockHash === PRECONFIRMED_BLOCK_HASH)
        throw new RpcResponseError(
          `eth_getLogs answer holds a pre-confirmed log (zero block hash) in block ${log.blockNumber}, inside a canonical range`,
        );
      blockHashes.set(log.blockNumber, log.blockHash);
    } else if (known !== log.blockHash)
      throw new RpcResponseError(
        `eth_getLogs answer holds two hashes for block ${log.blockNumber} (a reorg mid-answer)`,
      );
    if (!canonical) continue;
    const position = `${log.blockNumber}:${log.logIndex}`;
    if (positions.has(position))
      throw new RpcResponseError(
        `eth_getLogs answer holds two logs at block ${log.blockNumber}, logIndex ${log.logIndex}`,
      );
    positions.add(position);
  }
}

/** Sets apart the logs a filter excludes (a provider, or a subscription, may send them anyway), with the reason. */
export function partitionByFilter(parsed: readonly RpcLog[], filter: LogFilter): GetLogsResult {
  const addresses = new Set(filter.addresses);
  const topics = new Set(filter.topic0);
  const topic1 = filter.topic1 && new Set(filter.topic1);
  const topic2 = filter.topic2 && new Set(filter.topic2);
  const logs: RpcLog[] = [];
  const outOfFilter: GetLogsResult["outOfFilter"] = [];
  for (const log of parsed) {
    const reason =
      outOfFilterReason(log, filter, addresses, topics) ?? outOfTopics(log, topic1, topic2);
    if (reason === undefined) logs.push(log);
    else outOfFilter.push({ log, reason });
  }
  return { logs, outOfFilter };
}

function outOfFilterReason(
  log: RpcLog,
  filter: LogScope,
  addresses: ReadonlySet<Hex>,
  topics: ReadonlySet<Hex>,
): OutOfFilterReason | undefined {
  if (!inScope(log, filter)) return "outside_range";
  if (!addresses.has(log.address)) return "unrequested_address";
  const topic0 = log.topics[0];
  if (topic0 === undefined || !topics.has(topic0)) return "unrequested_topic";
  if (log.removed) return "removed_flag";
  return undefined;
}

/** Whether a log is of the filter's addresses and topics (its scope aside): for logs that come with others (whole transactions). */
export function matchesFilter(
  log: RpcLog,
  filter: Pick<LogFilter, "addresses" | "topic0" | "topic1" | "topic2">,
): boolean {
  const topic = (i: number) => (log.topics[i] ?? "0x") as Hex;
  return (
    filter.addresses.includes(log.address) &&
    filter.topic0.includes(topic(0)) &&
    (filter.topic1 === undefined || filter.topic1.includes(topic(1))) &&
    (filter.topic2 === undefined || filter.topic2.includes(topic(2)))
  );
}

/** A log whose topic1 or topic2 the filter does not accept (a provider that ignored a topic position). */
function outOfTopics(
  log: RpcLog,
  topic1: ReadonlySet<Hex> | undefined,
  topic2: ReadonlySet<Hex> | undefined,
): OutOfFilterReason | undefined {
  if (topic1 !== undefined && !topic1.has(log.topics[1] ?? "0x")) return "unrequested_topic";
  if (topic2 !== undefined && !topic2.has(log.topics[2] ?? "0x")) return "unrequested_topic";
  return undefined;
}

function inScope(log: RpcLog, scope: LogScope): boolean {
  if ("pending" in scope) return log.blockHash === PRECONFIRMED_BLOCK_HASH;
  if ("blockHash" in scope)
    return log.blockHash === scope.blockHash && log.blockNumber === scope.blockNumber;
  return log.blockNumber >= scope.from && log.blockNumber <= scope.to;
}
