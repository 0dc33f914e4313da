import { DEFAULT_CONFIG_PATH, loadSettings } from "../config/loadConfig.js";
import { runsDevnet, withDevnetEndpoints } from "../config/parseConfig.js";
import type { Config, ConfigSettings } from "../config/types.js";
import { devnetEndpointsPath, readRunningDevnet } from "../devnet/devnetEndpoints.js";
import { NoDevnetRunningError } from "../errors/devnet.js";

export type CommonFlags = {
  config?: string | undefined;
  db?: string | undefined;
  "log-level"?: string | undefined;
};

/** The validated config file with the command line's --db and --log-level on top (no devnet resolved yet). */
export function loadCommandSettings(flags: CommonFlags): ConfigSettings {
  return loadSettings(flags.config ?? DEFAULT_CONFIG_PATH, {
    databasePath: flags.db,
    logLevel: flags["log-level"],
  });
}

/**
 * A one-shot command's Config. A config that runs the bundled devnet takes the URLs the daemon
 * recorded beside the database while it runs that devnet (RPC, WebSocket, registration stand-in);
 * with no such daemon running, the command stops with one line saying so (exit 75: start it and retry).
 */
export function resolveCommandConfig(flags: CommonFlags): Config {
  const settings = loadCommandSettings(flags);
  return resolveRunningDevnet(settings);
}

/** The settings pointed at the devnet a daemon runs for the same database; unchanged when they name their RPC. */
export function resolveRunningDevnet(settings: ConfigSettings): Config {
  if (!runsDevnet(settings)) return settings as Config;
  const recordPath = devnetEndpointsPath(settings.database.path);
  const running = readRunningDevnet(recordPath);
  if (running === undefined)
    throw new NoDevnetRunningError(settings.source, settings.database.path, recordPath);
  return withDevnetEndpoints(settings, running);
}
