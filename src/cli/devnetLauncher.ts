import { existsSync, statSync } from "node:fs";
import DatabaseConstructor from "better-sqlite3";
import type { Hex } from "viem";
import { requireRpc, runsDevnet, withDevnetEndpoints } from "../config/parseConfig.js";
import type { Config, ConfigSettings } from "../config/types.js";
import { devnetEndpointsPath, removeDevnetEndpoints, writeDevnetEndpoints } from "../devnet/devnetEndpoints.js";
import type { Devnet, DevnetOptions } from "../devnet/startDevnet.js";
import { asListenError, isListenError } from "../ops/listenErrors.js";
import type { Logger } from "../ops/logger.js";
import type { Shutdown } from "../ops/shutdown.js";
import { backupSuffix, moveDatabaseAside } from "../store/sqlite/moveDatabaseAside.js";

/** The seed of the registration stand-in's codes: a demo wallet gets the same builder code on every devnet run. */
export const DEVNET_BUILDER_CODE_SEED = "flashindex-devnet";

/**
 * Starts the bundled devnet when the config runs one and returns the config pointed at it (RPC,
 * WebSocket, registration stand-in); the URLs are recorded beside the database while it runs, for
 * the other commands. The devnet modules are imported only here, and only then: a daemon on Base
 * never loads them.
 */
export async function startConfiguredDevnet(settings: ConfigSettings, logger: Logger, shutdown: Shutdown): Promise<Config> {
  const options = settings.devnet;
  if (options === undefined || !runsDevnet(settings)) return requireRpc(settings);
  const config = settings;
  const { startDemoTraffic } = await import("../devnet/demoTraffic.js");
  const { startRegistrationStandIn } = await import("../devnet/registrationStandIn.js");
  const log = logger.child({ component: "devnet" });
  const onError = (error: unknown) => log.warn({ msg: "Devnet hiccup", error: (error as Error).message });
  const devnet = await startDevnetForDatabase(config, log, {
    chainId: config.chainId,
    blockTimeMs: options.blockTimeMs,
    flashblockIntervalMs: options.flashblockIntervalMs,
    port: options.port,
    onError,
  }).catch((error: unknown) => {
    throw asListenError(error, { host: "127.0.0.1", port: options.port, key: "devnet.port" });
  });
  shutdown.add(() => devnet.stop());
  // The builder-code API cannot be reached from a devnet: its stand-in answers instead, and the demo
  // relayers attribute their payments to the codes it hands out for them.
  const registration = await startRegistrationStandIn({ seed: DEVNET_BUILDER_CODE_SEED });
  shutdown.add(() => registration.close());
  const traffic = startDemoTraffic(devnet, {
    paymentsPerSecond: options.paymentsPerSecond,
    reorgEverySeconds: options.reorgEverySeconds,
    dropEverySeconds: options.dropEverySeconds,
    builderCodeOf: (wallet) => registration.codeFor(wallet),
    onError,
  });
  shutdown.add(() => traffic.stop());
  const endpoints = { httpUrl: devnet.httpUrl, wsUrl: devnet.wsUrl, registrationUrl: registration.url };
  if (config.database.path !== ":memory:") {
    const recordPath = devnetEndpointsPath(config.database.path);
    writeDevnetEndpoints(recordPath, { ...endpoints, pid: process.pid, token: devnet.token, startedAt: new Date().toISOString() });
    // Removed first thing at shutdown: from then on the other commands say that no devnet runs.
    shutdown.add(() => removeDevnetEndpoints(recordPath, process.pid));
  }
  const configured = config.tokens.some((t) => t.address.toLowerCase() === devnet.token.toLowerCase());
  log.info({
    msg: "Started the local devnet: this is NOT Base. Point at Base with --config config/base-mainnet.json",
    rpc_url: devnet.httpUrl,
    ws_url: devnet.wsUrl,
    token: devnet.token,
    token_configured: configured,
    payments_per_second: options.paymentsPerSecond,
    registration_url: registration.url,
  });
  if (!configured) log.warn({ msg: "The devnet's test token is not among the configured tokens", token: devnet.token });
  return withDevnetEndpoints(config, endpoints);
}

/**
 * Starts the devnet with its chain kept beside the database, so a restart resumes on the same
 * chain. When the saved chain cannot be restored, or does not hold what the database indexed, the
 * old database (and the old chain state) are moved aside, never deleted, and both start afresh.
 * The caller holds the database's writer lock.
 */
async function startDevnetForDatabase(config: ConfigSettings, log: Logger, options: DevnetOptions): Promise<Devnet> {
  const { startDevnet } = await import("../devnet/startDevnet.js");
  const { DEVNET_STATE_INTERVAL_S, devnetStatePaths, moveDevnetStateAside, readDevnetInfo, writeDevnetInfo } = await import("../devnet/devnetState.js");
  const databasePath = config.database.path;
  if (databasePath === ":memory:") return startDevnet(options);
  const paths = devnetStatePaths(databasePath);
  const info = readDevnetInfo(paths.info);
  let reason = "no saved devnet chain";
  if (info !== undefined && info.chainId === config.chainId && existsSync(paths.anvilState)) {
    try {
      const state = { path: paths.anvilState, intervalSeconds: DEVNET_STATE_INTERVAL_S, genesisTimestamp: info.genesisTimestamp, restore: info };
      const devnet = await startDevnet({ ...options, state });
      const mismatch = await compareWithDatabase(databasePath, devnet.anvilUrl).catch((error: unknown) => `the saved chain could not be checked: ${(error as Error).message}`);
      if (mismatch === undefined) {
        log.info({ msg: "Restored the devnet chain", state_file: paths.anvilState, database: databasePath });
        return devnet;
      }
      await devnet.stop();
      reason = mismatch;
    } catch (error) {
      // A port that is taken says nothing about the saved chain: the database must stay where it is.
      if (isListenError(error)) throw error;
      reason = `the saved chain could not be loaded: ${(error as Error).message}`;
    }
  }
  const suffix = backupSuffix(new Date());
  if (existsSync(databasePath) && statSync(databasePath).size > 0) {
    const movedTo = moveDatabaseAside(databasePath, suffix);
    log.warn({ msg: "Moved the old database aside and started a fresh devnet chain", database: databasePath, moved_to: movedTo, reason });
  }
  moveDevnetStateAside(paths, suffix);
  const genesisTimestamp = Math.floor(Date.now() / 1_000);
  const devnet = await startDevnet({ ...options, state: { path: paths.anvilState, intervalSeconds: DEVNET_STATE_INTERVAL_S, genesisTimestamp } });
  writeDevnetInfo(paths.info, { chainId: devnet.chainId, genesisTimestamp, token: devnet.token, tokenDeployBlock: devnet.tokenDeployBlock });
  return devnet;
}

/**
 * Why the restored chain cannot carry on the database, or undefined when it can: same genesis, and
 * a head at or above every block the database indexed (blocks above the head would differ).
 */
async function compareWithDatabase(databasePath: string, anvilUrl: string): Promise<string | undefined> {
  if (!existsSync(databasePath)) return undefined;
  const db = new DatabaseConstructor(databasePath, { readonly: true, fileMustExist: true });
  let stored: { genesis: Hex | undefined; highest: number };
  try {
    const genesis = db.prepare("SELECT value FROM meta WHERE key = 'genesis_hash'").get() as { value: Hex } | undefined;
    const highest = db
      .prepare(
        `SELECT MAX(COALESCE((SELECT MAX(to_block) FROM synced_ranges), -1),
                    COALESCE((SELECT MAX(block_number) FROM logs WHERE status IN ('confirmed', 'finalized')), -1)) AS n`,
      )
      .get() as { n: number };
    stored = { genesis: genesis?.value, highest: highest.n };
  } catch {
    // No tables yet: nothing indexed that the chain could contradict.
    return undefined;
  } finally {
    db.close();
  }
  // viem whole only here, where a saved devnet chain is checked: `start` on a network never loads it.
  const { createPublicClient, http } = await import("viem");
  const client = createPublicClient({ transport: http(anvilUrl) });
  const [genesis, head] = await Promise.all([client.getBlock({ blockNumber: 0n }), client.getBlockNumber({ cacheTime: 0 })]);
  if (stored.genesis !== undefined && genesis.hash !== stored.genesis)
    return `the saved chain's genesis ${genesis.hash} is not the database's ${stored.genesis}`;
  if (Number(head) < stored.highest) return `the saved chain ends at block ${head}, below block ${stored.highest} that the database indexed`;
  return undefined;
}
