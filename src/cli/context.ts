import { getBlockHeader } from "../chain/blockHeaders.js";
import { createRpcClient } from "../chain/rpcClient.js";
import type { Common } from "../common.js";
import { WrongChainError } from "../errors/rpc.js";
import type { Config, ConfigSettings } from "../config/types.js";
import { ConfigError, FatalError } from "../errors/base.js";
import { pino } from "pino";
import { createLogger, type Logger } from "../ops/logger.js";
import { createMetrics, type Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { ChainIdentity } from "../store/types.js";
import { resolveCommandConfig, type CommonFlags } from "./resolveConfig.js";

export type { CommonFlags } from "./resolveConfig.js";

/** The dependency bag every long-running part takes as its first argument (one type with the sync stages' base). */
export type Context = Common;

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
export function createContext(flags: CommonFlags, shutdown: Shutdown, logStream: LogStream = "stderr"): Context {
  const config = resolveCommandConfig(flags);
  return contextFor(config, shutdown, createObservability(config, shutdown, logStream));
}

export function createObservability(settings: ConfigSettings, shutdown: Shutdown, logStream: LogStream): Observability {
  const logger = createLogger(settings.logLevel, pino.destination({ dest: logStream === "stdout" ? 1 : 2, sync: false }));
  shutdown.add(() => logger.flush());
  // The file-size gauge is the SQLite file's; a Postgres database is measured by Postgres itself.
  const metrics = createMetrics();
  return { logger, metrics };
}

/** The context on a resolved config: the one RPC client is built here, once. */
export function contextFor(config: Config, shutdown: Shutdown, { logger, metrics }: Observability): Context {
  const client = createRpcClient({ config, logger, metrics, shutdown });
  return { config, logger, metrics, shutdown, client };
}

/** Checks every RPC endpoint's chain id before anything is written: a mismatch is a config error (exit 2). */
export async function verifyChain(context: Context): Promise<void> {
  try {
    await context.client.verifyEndpoints();
  } catch (error) {
    if (error instanceof WrongChainError) throw new ConfigError("rpc.http", error.shortMessage);
    throw error;
  }
}

/** The genesis block hash the RPC serves: what a database is pinned to besides the chain id. */
export async function getChainIdentity(context: Context): Promise<ChainIdentity> {
  const genesis = await getBlockHeader(context.client, 0);
  if (genesis === undefined) throw new FatalError("The RPC serves no genesis block (eth_getBlockByNumber(0x0) returned null)");
  return { genesisHash: genesis.hash };
}

/** A token whose start block lies above the head is a config mistake (a typo, or the wrong network). */
export function checkStartBlocks(config: Config, head: number): void {
  config.tokens.forEach((token, i) => {
    if (token.startBlock > head)
      throw new ConfigError(`tokens[${i}].startBlock`, `${token.startBlock} is above the chain head ${head}`);
  });
}
