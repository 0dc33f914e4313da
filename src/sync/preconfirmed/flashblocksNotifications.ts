import { parseRpcLog } from "../../chain/rpcLog.js";
import type { RpcLog } from "../../rows/rpcLog.js";
import { HashesOnlyError, RpcResponseError } from "../../errors/rpc.js";

/** The two Flashblocks subscriptions that carry pre-confirmed logs. */
export type FlashblocksStream = "pendingLogs" | "newFlashblockTransactions";

type LogFilterParam = {
  address: readonly string[];
  topics: ReadonlyArray<readonly string[] | null>;
};

/**
 * What to ask a Flashblocks node for, best first: `pendingLogs` with our filter; else
 * `newFlashblockTransactions` with our filter (newer nodes: full transactions where a log matches,
 * base/base PR #1803); else `newFlashblockTransactions` with `true` (every full transaction; we filter).
 * Note: a node that does not know the filter form answers it with hashes only (it reads anything but
 * `true` as "hashes"): the caller then moves on to the next choice.
 */
export function flashblocksSubscriptions(
  filter: LogFilterParam,
): Array<{ stream: FlashblocksStream; params: readonly unknown[] }> {
  return [
    { stream: "pendingLogs", params: ["pendingLogs", filter] },
    { stream: "newFlashblockTransactions", params: ["newFlashblockTransactions", filter] },
    { stream: "newFlashblockTransactions", params: ["newFlashblockTransactions", true] },
  ];
}

/**
 * The logs one notification carries, and whether they are whole (every log of their transactions:
 * positions within a transaction can be numbered from them alone). Both shapes exist in the wild:
 * one item per message (current nodes) or an array (older ones, base/base PR #615); either is read.
 * `wanted` keeps the logs of our filter (a transaction's other logs come along on newFlashblockTransactions).
 */
export function logsOfNotification(
  stream: FlashblocksStream,
  result: unknown,
  wanted: (log: RpcLog) => boolean,
): { logs: RpcLog[]; whole: boolean } {
  const array = Array.isArray(result);
  const items: unknown[] = array ? result : [result];
  if (stream === "pendingLogs")
    return {
      logs: items.map((item, i) => parseRpcLog(item, `pendingLogs result[${i}]`)),
      whole: array,
    };
  const logs: RpcLog[] = [];
  items.forEach((item, i) => {
    const where = `newFlashblockTransactions result[${i}]`;
    if (typeof item === "string")
      throw new HashesOnlyError(`${where} is a transaction hash, not a transaction with its logs`);
    if (typeof item !== "object" || item === null)
      throw new RpcResponseError(`${where} is not a transaction object`);
    const txLogs = (item as { logs?: unknown }).logs;
    if (!Array.isArray(txLogs)) throw new RpcResponseError(`${where}.logs is not an array`);
    const hash = (item as { hash?: unknown }).hash;
    for (const [j, raw] of txLogs.entries()) {
      const log = parseRpcLog(raw, `${where}.logs[${j}]`);
      if (typeof hash === "string" && log.transactionHash !== hash.toLowerCase())
        throw new RpcResponseError(`${where}.logs[${j}] belongs to another transaction`);
      if (wanted(log)) logs.push(log);
    }
  });
  return { logs, whole: true };
}
