import type { RpcClient } from "./chain/rpcClient.js";
import type { Config } from "./config/types.js";
import type { Logger } from "./ops/logger.js";
import type { Metrics } from "./ops/metrics.js";
import type { Shutdown } from "./ops/shutdown.js";

/**
 * The dependency bag every long-running part takes as its first argument, built once where a
 * command starts (cli/context.ts): the frozen config, logging, metrics, shutdown and the RPC client.
 * The sync stages get it with the store and the shared services added (sync/syncDeps.ts).
 */
export type Common = {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
  client: RpcClient;
};
