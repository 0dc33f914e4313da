import type { Hex } from "viem";
import {
  checkConsistent,
  getLogs,
  type GetLogsResult,
  type LogFilter,
  type LogScope,
} from "../chain/getLogs.js";
import type { RpcClient } from "../chain/rpcClient.js";
import type { RpcLog } from "../rows/rpcLog.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
} from "../rows/paymentEvents.js";
import { RpcResponseError } from "../errors/rpc.js";
import { withRetry } from "../ops/withRetry.js";

/*
 * Watched tokens: of a token whose config lists `watch.addresses`, only the logs that concern those
 * addresses are asked for (docs/watch.md). eth_getLogs ANDs topic positions and ORs the values
 * within one, so "from or to watched" takes two filters:
 *   1. Transfer with `from` (topic1) watched;
 *   2. Transfer with `to` (topic2) watched;
 *   3. AuthorizationUsed / AuthorizationCanceled with the authorizer (topic1) watched, or the
 *      authorizer of one of the token's stored orders;
 * and then, for the payments received (2), the AuthorizationUsed logs of their transactions: the
 * authorizer of an EIP-3009 transfer is its `from`, so one more filter on AuthorizationUsed with
 * those senders as topic1, over the blocks those transfers are in only, keeps the logs of those
 * transactions. (Receipts would cost one request per transaction; this costs one per answer.)
 * The same filters serve the `logs` and `pendingLogs` subscriptions (subscriptionFilters).
 */

/** One token of which only the logs concerning some addresses are wanted. */
export type WatchedToken = {
  /** The token's address, lower case. */
  token: Hex;
  /** Lower-case addresses whose transfers (either side) and authorizations are wanted. */
  addresses: readonly Hex[];
  /** More authorizers whose AuthorizationUsed / AuthorizationCanceled are wanted (of stored orders), lower case. */
  authorizers: readonly Hex[];
};

/** What to fetch in one scope: the tokens read whole (`addresses`, as a LogFilter) and the watched ones. */
export type LogSelection = LogFilter & { watched?: readonly WatchedToken[] | undefined };

/** Senders per follow-up filter: long OR lists in one topic position are refused by some providers. */
export const FOLLOW_UP_SENDERS_PER_FILTER = 100;
/** Fetches of a watched selection again after a damaged merged answer (two answers that disagree on a block's hash). */
const WATCHED_FETCH_RETRIES = 2;

/** An address as a 32-byte topic word (left-padded with zeros), as indexed event parameters are. */
export function topicWord(address: Hex): Hex {
  return `0x${"0".repeat(24)}${address.slice(2).toLowerCase()}`;
}

/** The address in a 32-byte topic word. */
export function addressOfWord(word: Hex): Hex {
  return `0x${word.slice(26)}`;
}

/**
 * The first-round filters of a selection: one for the tokens read whole (if any), three per watched
 * token. The `logs` and `pendingLogs` subscriptions take one each, and check their notifications with it.
 */
export function selectionFilters(selection: LogSelection): LogFilter[] {
  const scope = scopeOf(selection);
  const filters: LogFilter[] =
    selection.addresses.length > 0
      ? [{ ...scope, addresses: selection.addresses, topic0: selection.topic0 }]
      : [];
  for (const watched of selection.watched ?? []) {
    const words = watched.addresses.map(topicWord);
    const authorizers = [...new Set([...watched.addresses, ...watched.authorizers])].map(topicWord);
    const token = { ...scope, addresses: [watched.token] };
    filters.push(
      { ...token, topic0: [TRANSFER_TOPIC], topic1: words },
      { ...token, topic0: [TRANSFER_TOPIC], topic2: words },
      {
        ...token,
        topic0: [AUTHORIZATION_USED_TOPIC, AUTHORIZATION_CANCELED_TOPIC],
        topic1: authorizers,
      },
    );
  }
  return filters;
}

/** Whether a selection watches any token (and so takes more than one request). */
export const isWatched = (selection: LogSelection): boolean => (selection.watched?.length ?? 0) > 0;

/**
 * eth_getLogs for a selection: the first-round filters, then the AuthorizationUsed logs of the
 * transactions that paid a watched address, merged into one answer in (block, logIndex) order.
 * Each request is checked and retried by the RPC client as any other; `accept` runs on the merged
 * answer, and an RpcResponseError from it (a damaged answer, or answers that disagree on a block's
 * hash: the chain moved between two requests) fetches the whole selection again.
 */
export async function getSelectedLogs<T>(
  client: RpcClient,
  selection: LogSelection,
  accept: (answer: GetLogsResult) => T,
): Promise<T> {
  if (!isWatched(selection)) return getLogs(client, selection, accept);
  return withRetry(async () => accept(await fetchSelection(client, selection)), {
    retryCount: WATCHED_FETCH_RETRIES,
    shouldRetry: ({ error }) => error instanceof RpcResponseError,
  });
}

async function fetchSelection(client: RpcClient, selection: LogSelection): Promise<GetLogsResult> {
  const answers = await Promise.all(
    selectionFilters(selection).map((filter) => getLogs(client, filter)),
  );
  const followUps = await Promise.all(
    followUpFilters(
      selection,
      answers.flatMap((a) => a.logs),
    ).map(async ({ filter, transactions }) => {
      const answer = await getLogs(client, filter);
      return {
        logs: answer.logs.filter((log) => transactions.has(log.transactionHash)),
        outOfFilter: answer.outOfFilter,
      };
    }),
  );
  const all = [...answers, ...followUps];
  const logs = mergeLogs(all.map((a) => a.logs));
  checkConsistent(logs, scopeOf(selection));
  return { logs, outOfFilter: all.flatMap((a) => a.outOfFilter) };
}

/**
 * For each watched token, the AuthorizationUsed filters for the senders of the transfers a watched
 * address received (those not already asked for as authorizers), over the blocks of those
 * transfers, with the transactions whose logs are kept.
 */
function followUpFilters(
  selection: LogSelection,
  logs: readonly RpcLog[],
): Array<{ filter: LogFilter; transactions: ReadonlySet<Hex> }> {
  const scope = scopeOf(selection);
  const out: Array<{ filter: LogFilter; transactions: ReadonlySet<Hex> }> = [];
  for (const watched of selection.watched ?? []) {
    const asked = new Set([...watched.addresses, ...watched.authorizers].map(topicWord));
    const receivers = new Set(watched.addresses.map(topicWord));
    const received = logs.filter(
      (log) =>
        log.address === watched.token &&
        log.topics[0] === TRANSFER_TOPIC &&
        receivers.has(log.topics[2]!) &&
        !asked.has(log.topics[1]!),
    );
    if (received.length === 0) continue;
    const senders = [...new Set(received.map((log) => log.topics[1]!))].sort();
    const transactions = new Set(received.map((log) => log.transactionHash));
    const blocks = received.map((log) => log.blockNumber);
    const narrowed: LogScope =
      "from" in scope ? { from: Math.min(...blocks), to: Math.max(...blocks) } : scope;
    for (let i = 0; i < senders.length; i += FOLLOW_UP_SENDERS_PER_FILTER) {
      const topic1 = senders.slice(i, i + FOLLOW_UP_SENDERS_PER_FILTER);
      out.push({
        filter: {
          ...narrowed,
          addresses: [watched.token],
          topic0: [AUTHORIZATION_USED_TOPIC],
          topic1,
        },
        transactions,
      });
    }
  }
  return out;
}

/** Logs of several answers, each once (a transfer between two watched addresses matches two filters), in (block, logIndex) order. */
function mergeLogs(answers: ReadonlyArray<readonly RpcLog[]>): RpcLog[] {
  const byKey = new Map<string, RpcLog>();
  for (const logs of answers)
    for (const log of logs)
      byKey.set(`${log.blockNumber}:${log.logIndex}:${log.transactionHash}`, log);
  return [...byKey.values()].sort(
    (a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex,
  );
}

function scopeOf(filter: LogScope): LogScope {
  if ("pending" in filter) return { pending: true };
  if ("blockHash" in filter)
    return { blockHash: filter.blockHash, blockNumber: filter.blockNumber };
  return { from: filter.from, to: filter.to };
}
