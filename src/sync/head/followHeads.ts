import { getBlockHeader, parseBlockHeader, type BlockHeader } from "../../chain/blockHeaders.js";
import { topicsOf, type LogFilter } from "../../chain/getLogs.js";
import type { RpcClient } from "../../chain/rpcClient.js";
import { createWsSubscription } from "../../chain/wsSubscription.js";
import { RetryableError } from "../../errors/base.js";
import type { Logger } from "../../ops/logger.js";
import { sleep } from "../../ops/shutdown.js";
import type { SyncDeps } from "../syncDeps.js";

export type HeadSources = {
  logger: Logger;
  /** The head path's client (its own timeout). */
  headClient: RpcClient;
  /** Queues a head; resolves once it is applied (or its temporary failure logged). */
  submitHead: (head: BlockHeader) => Promise<void>;
  /** Heads queued and not yet started. */
  queued: () => number;
  /** One `logs` subscription per filter, for the node's `removed` flags; fixed at start-up. */
  logFilters: () => LogFilter[];
  onLogNotification: (result: unknown) => void;
};

/**
 * Hands heads to `submitHead` until shutdown or a failure (thrown): newHeads over the WebSocket when
 * one is configured, and polling of `latest`, which runs always but only acts when the WebSocket
 * has been quiet: it is the fallback.
 */
export async function followHeads(deps: SyncDeps, sources: HeadSources): Promise<void> {
  const { config, metrics, shutdown } = deps;
  const { logger, headClient, submitHead } = sources;
  let lastWsHeadAt = 0;
  // Boxed, so that even a rejection with `undefined` stops the loop.
  let failure: { error: unknown } | undefined;
  const fail = (error: unknown) => {
    failure ??= { error };
  };
  if (config.rpc.ws !== undefined) {
    const ws = {
      url: config.rpc.ws,
      initialDelayMs: config.realtime.reconnectInitialDelayMs,
      maxDelayMs: config.realtime.reconnectMaxDelayMs,
    };
    createWsSubscription(deps, {
      ...ws,
      name: "newHeads",
      params: ["newHeads"],
      onNotification: (result) => {
        lastWsHeadAt = Date.now();
        try {
          submitHead(parseBlockHeader(result, "newHeads notification")).catch(fail);
        } catch (error) {
          metrics.wsMessagesRejected.inc({ subscription: "newHeads" });
          logger.warn({ msg: "Rejected newHeads notification", error: (error as Error).message });
        }
      },
    });
    // A watched token takes one subscription per filter (topic positions AND, so "from or to" is two); the list is fixed at start-up.
    for (const filter of sources.logFilters())
      createWsSubscription(deps, {
        ...ws,
        name: "logs",
        params: ["logs", { address: filter.addresses, topics: topicsOf(filter) }],
        onNotification: sources.onLogNotification,
      });
  }
  while (failure === undefined) {
    await sleep(config.realtime.headPollIntervalMs, shutdown.signal);
    if (Date.now() - lastWsHeadAt < 3 * config.realtime.headPollIntervalMs + 2_000) continue;
    try {
      const head = await getBlockHeader(headClient, "latest");
      if (head !== undefined && sources.queued() === 0) await submitHead(head);
    } catch (error) {
      if (!(error instanceof RetryableError)) throw error;
      logger.warn({ msg: "Failed to poll the head", error: error.shortMessage });
    }
  }
  throw failure.error;
}
