import type { RpcClient } from "../chain/rpcClient.js";
import type { Config } from "../config/types.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { Database } from "../store/openDatabase.js";

/** The dependency bag every sync stage takes first: configuration, logging, metrics, shutdown, the chain and the store. */
export type SyncDeps = {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
  client: RpcClient;
  db: Database;
};
