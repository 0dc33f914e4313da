import { FatalError, RetryableError } from "./base.js";

/**
 * A command whose config runs the bundled devnet found no daemon running it for the database.
 * Exit 75: it passes once `flashindex start` (npm start) runs with that config.
 */
export class NoDevnetRunningError extends RetryableError {
  override name = "NoDevnetRunningError";
  constructor(configPath: string, databasePath: string, recordPath: string) {
    super(
      `no devnet is running for ${databasePath}: ${configPath} runs the bundled devnet (devnet.enabled), and no daemon records one in ${recordPath}; start it with 'npm start' (or 'flashindex start --config ${configPath}') and try again, or point rpc.http at a node and set devnet.enabled to false`,
    );
  }
}

/** Anvil could not bind the port it was given (someone took it after the probe): the launcher tries another (exit 1 when none is left). */
export class PortTakenError extends FatalError {
  override name = "PortTakenError";
}
