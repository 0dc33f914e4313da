import { existsSync, statSync } from "node:fs";
import { requireRpc, runsDevnet, withDevnetEndpoints } from "../config/parseConfig.js";
import type { Config, ConfigSettings } from "../config/types.js";
import {
  devnetEndpointsPath,
  removeDevnetEndpoints,
  writeDevnetEndpoints,
} from "../devnet/devnetEndpoints.js";
import type { Devnet, DevnetOptions } from "../devnet/startDevnet.js";
import { asListenError, isListenError } from "../ops/listenErrors.js";
import type { Shutdown } from "../ops/shutdown.js";
import { backupSuffix, moveDatabaseAside } from "../store/openStore.js";
import { readPinnedGenesis } from "../store/pinnedGenesis.js";
import type { Observability } from "./context.js";

/** The seed of the registration stand-in's codes: a demo wallet gets the same builder code on every devnet run. */
export const DEVNET_BUILDER_CODE_SEED = "flashindex-devnet";

/** The config to run on, and where a restored devnet chain ended when it was loaded. */
export type ConfiguredDevnet = {
  config: Config;
  /** The restored chain's head before its first new block: blocks the database indexed above it are rewound (openIndex.ts). */
  chainEndsAt: number | undefined;
};

/**
 * Starts the bundled devnet when the config runs one and returns the config pointed at it (RPC,
 * WebSocket, registration stand-in); the URLs are recorded beside the database while it runs, for
 * the other commands. The devnet modules are imported only here, and only then: a daemon on Base
 * never loads them.
 */
export async function startConfiguredDevnet(
  settings: ConfigSettings,
  observability: Observability,
  shutdown: Shutdown,
): Promise<ConfiguredDevnet> {
  const options = settings.devnet;
  if (options === undefined || !runsDevnet(settings))
    return { config: requireRpc(settings), chainEndsAt: undefined };
  const { logger } = observability;
  const config = settings;
  const { startDemoTraffic } = await import("../devnet/demoTraffic.js");
  const { startRegistrationStandIn } = await import("../devnet/registrationStandIn.js");
  const log = logger.child({ component: "devnet" });
  const onError = (error: unknown) =>
    log.warn({ msg: "Devnet hiccup", error: (error as Error).message });
  const devnet = await startDevnetForDatabase(
    config,
    { logger: log, metrics: observability.metrics },
    {
      chainId: config.chainId,
      blockTimeMs: options.blockTimeMs,
      flashblockIntervalMs: options.flashblockIntervalMs,
      port: options.port,
      onError,
    },
  ).catch((error: unknown) => {
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
  const endpoints = {
    httpUrl: devnet.httpUrl,
    wsUrl: devnet.wsUrl,
    registrationUrl: registration.url,
  };
  if (config.database.path !== ":memory:") {
    const recordPath = devnetEndpointsPath(config.database.path);
    writeDevnetEndpoints(recordPath, {
      ...endpoints,
      pid: process.pid,
      token: devnet.token,
      startedAt: new Date().toISOString(),
    });
    // Removed first thing at shutdown: from then on the other commands say that no devnet runs.
    shutdown.add(() => removeDevnetEndpoints(recordPath, process.pid));
  }
  const configured = config.tokens.some(
    (t) => t.address.toLowerCase() === devnet.token.toLowerCase(),
  );
  log.info({
    msg: "Started the local devnet: this is NOT Base. Point at Base with --config config/base-mainnet.json",
    rpc_url: devnet.httpUrl,
    ws_url: devnet.wsUrl,
    token: devnet.token,
    token_configured: configured,
    payments_per_second: options.paymentsPerSecond,
    registration_url: registration.url,
  });
  if (!configured)
    log.warn({
      msg: "The devnet's test token is not among the configured tokens",
      token: devnet.token,
    });
  return { config: withDevnetEndpoints(config, endpoints), chainEndsAt: devnet.restoredHead };
}

/**
 * Starts the devnet with its chain kept beside the database, so a restart resumes on the same
 * chain. A saved chain that cannot be restored, or whose genesis is not the one the database is
 * pinned to (another chain), has the old database (and the old chain state) moved aside, never
 * deleted, and both start afresh. A saved chain of the same genesis is continued even when it was
 * saved before the database's last blocks: the caller rewinds those as a reorg (openIndex.ts).
 * The caller holds the database's writer lock.
 */
async function startDevnetForDatabase(
  config: ConfigSettings,
  { logger: log, metrics }: Observability,
  options: DevnetOptions,
): Promise<Devnet> {
  const { startDevnet } = await import("../devnet/startDevnet.js");
  const {
    DEVNET_STATE_INTERVAL_S,
    devnetStatePaths,
    moveDevnetStateAside,
    readDevnetInfo,
    writeDevnetInfo,
  } = await import("../devnet/devnetState.js");
  const databasePath = config.database.path;
  if (databasePath === ":memory:") return startDevnet(options);
  const paths = devnetStatePaths(databasePath);
  const info = readDevnetInfo(paths.info);
  let reason = "no saved devnet chain";
  if (info !== undefined && info.chainId === config.chainId && existsSync(paths.anvilState)) {
    const state = {
      path: paths.anvilState,
      intervalSeconds: DEVNET_STATE_INTERVAL_S,
      genesisTimestamp: info.genesisTimestamp,
      restore: info,
    };
    const restored = await startDevnet({ ...options, state }).catch((error: unknown) => {
      // A port that is taken says nothing about the saved chain: the database must stay where it is.
      if (isListenError(error)) throw error;
      return `the saved chain could not be loaded: ${(error as Error).message}`;
    });
    if (typeof restored === "string") reason = restored;
    else {
      // A database that cannot be read stops the start, as it would without a devnet: it is not set aside.
      const pinned = await readPinnedGenesis(config, metrics).catch(async (error: unknown) => {
        await restored.stop();
        throw error;
      });
      if (pinned === undefined || pinned.toLowerCase() === restored.genesisHash.toLowerCase()) {
        log.info({
          msg: "Restored the devnet chain",
          state_file: paths.anvilState,
          database: databasePath,
          head_block: restored.restoredHead,
        });
        return restored;
      }
      await restored.stop();
      reason = `the saved chain's genesis ${restored.genesisHash} is not the database's ${pinned}`;
    }
  }
  const suffix = backupSuffix(new Date());
  if (existsSync(databasePath) && statSync(databasePath).size > 0) {
    const movedTo = moveDatabaseAside(databasePath, suffix);
    log.warn({
      msg: "Moved the old database aside and started a fresh devnet chain",
      database: databasePath,
      moved_to: movedTo,
      reason,
    });
  }
  moveDevnetStateAside(paths, suffix);
  const genesisTimestamp = Math.floor(Date.now() / 1_000);
  const devnet = await startDevnet({
    ...options,
    state: { path: paths.anvilState, intervalSeconds: DEVNET_STATE_INTERVAL_S, genesisTimestamp },
  });
  writeDevnetInfo(paths.info, {
    chainId: devnet.chainId,
    genesisTimestamp,
    token: devnet.token,
    tokenDeployBlock: devnet.tokenDeployBlock,
  });
  return devnet;
}
