import type { Hex } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import type { Logger } from "../ops/logger.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { Store } from "../store/store.js";
import type { Attributor } from "./attributeLogs.js";

/**
 * Attribution that runs after the rows it explains are committed, so a slow or hung calldata batch
 * never delays a pre-confirmation or a block's confirmation. A failure only leaves the transactions
 * unattributed (the `unattributed_transfers` view shows them); the logs are already safe.
 */
export function createLateAttribution(deps: {
  attributor: Attributor | undefined;
  /** The client of the stage that calls (the head path's gives way after realtime.requestTimeoutMs). */
  client: RpcClient;
  store: Store;
  logger: Logger;
  shutdown: Shutdown;
}): (txHashes: readonly Hex[], what: string) => void {
  const { attributor, client, store, logger, shutdown } = deps;
  return (txHashes, what) => {
    if (attributor === undefined || txHashes.length === 0) return;
    attributor
      .attribute(client, txHashes)
      .then(async (transactions) => {
        if (transactions.length === 0 || shutdown.isKilled()) return;
        await store.insertAttribution(transactions, Date.now());
        attributor.remember(transactions.map((t) => t.tx.hash));
      })
      .catch((error: unknown) =>
        logger.warn({
          msg: `Failed to attribute ${what} transactions`,
          error: (error as Error).message,
        }),
      );
  };
}
