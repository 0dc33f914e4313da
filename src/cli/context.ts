import { createRpcClient } from "../chain/rpcClient.js";
import type { Common } from "../common.js";
import { WrongChainError } from "../errors/rpc.js";
import type { Config, ConfigSettings } from "../config/types.js";
import { ConfigError } from "../errors/base.js";
import { pino } from "pino";
import { createLogger, type Logger } from "../ops/logger.js";
import { createMetrics, type Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import { loadCommandSettings, resolveCommandConfig, type CommonFlags } from "./resolveConfig.js";

export type { CommonFlags } from "./resolveConfig.js";

/**
 * Where a command's logs go: the daemon's JSON log is its stdout; a one-shot command keeps stdout
 * for its result (one JSON document under --json) and logs to stderr.
 */
export type LogStream = "stdout" | "stderr";

/** What exists before the RPC is known: the logger and the metrics (the daemon serves them before its devnet starts). */
export type Observability = { logger: Logger; metrics: Metrics };

/**
 * A one-shot command's context: reads and validates the config, finds the running devnet when the
 * config runs one, then builds the logger, metrics and RPC client from the real config.
 */
export function createContext(
  flags: CommonFlags,
  shutdown: Shutdown,
  logStream: LogStream = "stderr",
): Common {
  const config = resolveCommandConfig(flags);
  return contextFor(config, shutdown, createObservability(config, shutdown, logStream));
}

/** A context without an RPC client, for the commands that only read or write the database. */
export type StoreContext = Observability & { config: ConfigSettings; shutdown: Shutdown };

/**
 * A database-only command's context (webhooks, register with --base-url, order void/show/list):
 * the config file with the command line on top, a devnet config's devnet not looked for (it need
 * not run), and the logger and metrics.
 */
export function createStoreContext(
  flags: CommonFlags,
  shutdown: Shutdown,
  logStream: LogStream = "stderr",
): StoreContext {
  const config = loadCommandSettings(flags);
  return { config, shutdown, ...createObservability(config, shutdown, logStream) };
}

export function createObservability(
  settings: ConfigSettings,
  shutdown: Shutdown,
  logStream: LogStream,
): Observability {
  const logger = createLogger(
    settings.logLevel,
    pino.destination({ dest: logStream === "stdout" ? 1 : 2, sync: false }),
  );
  shutdown.add(() => logger.flush());
  // The file-size gauge is the SQLite file's; a Postgres database is measured by Postgres itself.
  const metrics = createMetrics();
  return { logger, metrics };
}

/** The context on a resolved config: the one RPC client is built here, once. */
export function contextFor(
  config: Config,
  shutdown: Shutdown,
  { logger, metrics }: Observability,
): Common {
  const client = createRpcClient({ config, logger, metrics, shutdown });
  return { config, logger, metrics, shutdown, client };
}

/** Checks every RPC endpoint's chain id before anything is written: a mismatch is a config error (exit 2). */
export async function verifyChain(context: Common): Promise<void> {
  try {
    await context.client.verifyEndpoints();
  } catch (error) {
    if (error instanceof WrongChainError) throw new ConfigError("rpc.http", error.shortMessage);
    throw error;
  }
}
