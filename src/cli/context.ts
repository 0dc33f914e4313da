import { getBlockHeader } from "../chain/blockHeaders.js";
import { createRpcClient } from "../chain/rpcClient.js";
import type { Common } from "../common.js";
import { WrongChainError } from "../chain/rpcErrors.js";
import { loadConfig, DEFAULT_CONFIG_PATH } from "../config/loadConfig.js";
import type { Config } from "../config/types.js";
import { ConfigError, FatalError } from "../errors.js";
import { pino } from "pino";
import { createLogger } from "../ops/logger.js";
import { createMetrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { ChainIdentity } from "../store/openDatabase.js";

/** The dependency bag every long-running part takes as its first argument (one type with the sync stages' base). */
export type Context = Common;

export type CommonFlags = { config?: string | undefined; db?: string | undefined; "log-level"?: string | undefined };

/**
 * Where a command's logs go: the daemon's JSON log is its stdout; a one-shot command keeps stdout
 * for its result (one JSON document under --json) and logs to stderr.
 */
export type LogStream = "stdout" | "stderr";

/** Reads and validates the config, then builds the logger, metrics and RPC client from it. */
export function createContext(flags: CommonFlags, shutdown: Shutdown, logStream: LogStream = "stderr"): Context {
  const config = loadConfig(flags.config ?? DEFAULT_CONFIG_PATH, { databasePath: flags.db, logLevel: flags["log-level"] });
  const logger = createLogger(config.logLevel, pino.destination({ dest: logStream === "stdout" ? 1 : 2, sync: false }));
  shutdown.add(() => logger.flush());
  // The file-size gauge is the SQLite file's; a Postgres database is measured by Postgres itself.
  const metrics = createMetrics(config.database.url === undefined ? { databasePath: config.database.path } : {});
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
