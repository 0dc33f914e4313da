import type { Config } from "../config/types.js";
import type { Logger } from "../ops/logger.js";
import type { Shutdown } from "../ops/shutdown.js";

/**
 * Starts the bundled devnet when the config asks for it and returns the config pointed at it.
 * The devnet module is imported only here, and only then: a daemon on Base never loads it.
 */
export async function startConfiguredDevnet(config: Config, logger: Logger, shutdown: Shutdown): Promise<Config> {
  const options = config.devnet;
  if (options === undefined || !options.enabled) return config;
  const { startDevnet } = await import("../devnet/startDevnet.js");
  const { startDemoTraffic } = await import("../devnet/demoTraffic.js");
  const { startRegistrationStandIn } = await import("../devnet/registrationStandIn.js");
  const log = logger.child({ component: "devnet" });
  const onError = (error: unknown) => log.warn({ msg: "Devnet hiccup", error: (error as Error).message });
  const devnet = await startDevnet({
    chainId: config.chainId,
    blockTimeMs: options.blockTimeMs,
    flashblockIntervalMs: options.flashblockIntervalMs,
    port: options.port,
    onError,
  });
  const traffic = startDemoTraffic(devnet, {
    paymentsPerSecond: options.paymentsPerSecond,
    reorgEverySeconds: options.reorgEverySeconds,
    dropEverySeconds: options.dropEverySeconds,
    onError,
  });
  // The builder-code API cannot be reached from a devnet: its stand-in answers instead.
  const registration = await startRegistrationStandIn({});
  shutdown.add(() => registration.close());
  shutdown.add(() => devnet.stop());
  shutdown.add(() => traffic.stop());
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
  return Object.freeze({
    ...config,
    rpc: Object.freeze({ ...config.rpc, http: [devnet.httpUrl], ws: devnet.wsUrl, preconfWs: devnet.wsUrl }),
    registration: Object.freeze({ ...config.registration, baseUrl: registration.url }),
  });
}
