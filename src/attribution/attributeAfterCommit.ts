import type { Hex } from "viem";
import type { Logger } from "../ops/logger.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { Database } from "../store/openDatabase.js";
import type { AttributionWriter } from "../store/attributionWriter.js";
import type { Attributor } from "./attributeLogs.js";
import type { Metrics } from "../ops/metrics.js";
import { timedWrite } from "../store/timedWrite.js";

/**
 * Attribution that runs after the rows it explains are committed, so a slow or hung calldata batch
 * never delays a pre-confirmation or a block's confirmation. A failure only leaves the transactions
 * unattributed (the `unattributed_transfers` view shows them); the logs are already safe.
 */
export function createLateAttribution(deps: {
  attributor: Attributor | undefined;
  writer: AttributionWriter;
  db: Database;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
}): (txHashes: readonly Hex[], what: string) => void {
  const { attributor, writer, db, logger, metrics, shutdown } = deps;
  return (txHashes, what) => {
    if (attributor === undefined || txHashes.length === 0) return;
    attributor
      .attribute(txHashes)
      .then((transactions) => {
        if (transactions.length === 0 || shutdown.isKilled()) return;
        timedWrite(db, metrics, "attribution", () => writer.insert(transactions, Date.now()));
        attributor.remember(transactions);
      })
      .catch((error: unknown) => logger.warn({ msg: `Failed to attribute ${what} transactions`, error: (error as Error).message }));
  };
}
