import { existsSync, writeFileSync } from "node:fs";
import { privateKeyToAccount } from "viem/accounts";
import type { Shutdown } from "../../ops/shutdown.js";
import { pino } from "pino";
import { ConfigError, UsageError } from "../../errors/base.js";
import { loadSettings } from "../../config/loadConfig.js";
import { LOG_LEVELS, type LogLevel } from "../../config/types.js";
import { asListenError } from "../../ops/listenErrors.js";
import { createLogger } from "../../ops/logger.js";
import { defineCommand, type CommandValues, type ParsedCommand } from "../commandLine.js";
import { DEVNET_BUILDER_CODE_SEED } from "../devnetLauncher.js";
import { signAuthorization, SIGN_OPTIONS } from "./devnetSignCommand.js";

const OPTIONS = {
  port: {
    type: "string",
    value: "N",
    description: "port of the front (default 8545; 0 picks a free one)",
  },
  "block-time-ms": {
    type: "string",
    value: "N",
    description: "canonical block every N ms (default 2000; 0: only on devnet_mine)",
  },
  "flashblock-ms": {
    type: "string",
    value: "N",
    description: "flashblock every N ms (default 200; 0: only on devnet_flashblock)",
  },
  payments: {
    type: "string",
    value: "N",
    description: "demo payments per second (default 0: none)",
  },
  "pending-logs": {
    type: "string",
    value: "SHAPE",
    description: '"single" (one log per notification, default) or "array" (v0.3.0/v0.4.0 nodes)',
  },
  "write-config": {
    type: "string",
    value: "PATH",
    description: "also write a ready flashindex config for this devnet to PATH (a new file)",
  },
  ...SIGN_OPTIONS,
} as const;

export const DEVNET_COMMAND = defineCommand({
  name: "devnet",
  summary:
    "run the bundled local Base stand-in (anvil + Flashblocks front); sign-authorization: sign with a devnet key",
  usage: "[sign-authorization] [options]",
  description: `Runs the bundled local Base stand-in on its own: anvil (chain id 8453) behind a
Flashblocks-compatible JSON-RPC front (HTTP and WebSocket on one port) with the EIP-3009 test token
deployed and funded, and a stand-in for the builder-code registration API. Prints its URLs, the
token address, the funded keys and a ready config for a separate daemon (--write-config PATH writes
it to a file), then runs until Ctrl-C. With --config, the flags' defaults come from the file's
devnet section (devnet.port, blockTimeMs, flashblockIntervalMs, paymentsPerSecond) and its logLevel.
Logs go to stderr. --db does not apply: this devnet keeps no database, and starts a new chain every
run.

devnet sign-authorization --to B --value V [--key N] [--kind transfer|receive|cancel] ...
  Signs an EIP-3009 authorization with devnet key N (anvil's public test keys; default 1, a funded
  buyer) and prints the flags of the command that uses it: 'order add ...' for transfer and
  receive, 'cancel ...' for cancel. The token's domain is read from the devnet the config points at
  (with the bundled config: the one 'npm start' runs).`,
  options: OPTIONS,
  positionals: true,
  epilog: `Admin methods: devnet_mine, devnet_flashblock, devnet_reorg(depth), devnet_dropPreconfirmed(txHash),
devnet_disconnectWebSockets(), devnet_setFaults({ errorRate, latencyMs, maxBlockRange, maxResults }),
devnet_setPendingLogsMode({ shape, repeat }).`,
  run: runDevnetCommand,
});

type DevnetValues = CommandValues<typeof OPTIONS>;

/** --log-level without a config: one of LOG_LEVELS, else a usage error (exit 2). */
function readLogLevel(value: string | undefined): LogLevel {
  if (value === undefined) return "info";
  if (!(LOG_LEVELS as readonly string[]).includes(value))
    throw new UsageError(
      `--log-level: expected one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(value)}`,
    );
  return value as LogLevel;
}

function intFlag(
  name: string,
  value: string | undefined,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > max)
    throw new UsageError(
      `${name}: expected a whole number from 0 to ${max}, got ${JSON.stringify(value)}`,
    );
  return Number(value);
}

async function runDevnetCommand(
  { values, positionals }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  const [sub, ...rest] = positionals;
  if (sub === "sign-authorization") {
    if (rest.length > 0)
      throw new UsageError(
        `devnet sign-authorization: unexpected argument ${JSON.stringify(rest[0])}`,
      );
    return signAuthorization(values, shutdown);
  }
  if (sub !== undefined)
    throw new UsageError(
      `devnet: unexpected argument ${JSON.stringify(sub)} (the one subcommand is sign-authorization; see flashindex devnet --help)`,
    );
  const signFlag = Object.keys(SIGN_OPTIONS).find(
    (name) => values[name as keyof typeof SIGN_OPTIONS] !== undefined && name !== "json",
  );
  if (signFlag !== undefined)
    throw new UsageError(`devnet: --${signFlag} belongs to 'flashindex devnet sign-authorization'`);
  return runStandaloneDevnet(values, shutdown);
}

async function runStandaloneDevnet(values: DevnetValues, shutdown: Shutdown): Promise<void> {
  if (values.db !== undefined)
    throw new UsageError(
      "devnet: --db does not apply: the standalone devnet keeps no database and starts a new chain every run (see flashindex devnet --help)",
    );
  const writeConfigPath = values["write-config"];
  if (writeConfigPath !== undefined && existsSync(writeConfigPath))
    throw new ConfigError(
      "--write-config",
      `${writeConfigPath} already exists: name a new file (nothing was overwritten)`,
    );
  // With --config, the file's devnet section gives the defaults (flags still win); the logs follow its level.
  const config =
    values.config === undefined
      ? undefined
      : loadSettings(values.config, { logLevel: values["log-level"] });
  const defaults = config?.devnet;
  const logger = createLogger(
    config?.logLevel ?? readLogLevel(values["log-level"]),
    pino.destination({ dest: 2, sync: false }),
  ).child({ component: "devnet" });
  shutdown.add(() => logger.flush());
  const shape = values["pending-logs"] ?? "single";
  if (shape !== "single" && shape !== "array")
    throw new UsageError(`--pending-logs: expected single or array, got ${JSON.stringify(shape)}`);
  const port = intFlag("--port", values.port, defaults?.port ?? 8545, 65_535);
  const blockTimeMs = intFlag(
    "--block-time-ms",
    values["block-time-ms"],
    defaults?.blockTimeMs ?? 2_000,
  );
  const flashblockIntervalMs = intFlag(
    "--flashblock-ms",
    values["flashblock-ms"],
    defaults?.flashblockIntervalMs ?? 200,
  );
  const paymentsPerSecond = intFlag(
    "--payments",
    values.payments,
    defaults?.paymentsPerSecond ?? 0,
  );
  const { startDevnet } = await import("../../devnet/startDevnet.js");
  const { startDemoTraffic } = await import("../../devnet/demoTraffic.js");
  const { startRegistrationStandIn } = await import("../../devnet/registrationStandIn.js");
  const devnet = await startDevnet({
    port,
    blockTimeMs,
    flashblockIntervalMs,
    pendingLogs: { shape, repeat: false },
    onError: (error) => logger.warn({ msg: "Devnet hiccup", error: (error as Error).message }),
  }).catch((error: unknown) => {
    throw asListenError(error, { host: "127.0.0.1", port, key: "--port" });
  });
  shutdown.add(() => devnet.stop());
  const registration = await startRegistrationStandIn({ seed: DEVNET_BUILDER_CODE_SEED });
  shutdown.add(() => registration.close());
  const traffic = startDemoTraffic(devnet, {
    paymentsPerSecond,
    builderCodeOf: (wallet) => registration.codeFor(wallet),
  });
  shutdown.add(() => traffic.stop());
  const agents = devnet.privateKeys.slice(6, 9).map((key) => privateKeyToAccount(key).address);
  const ready = {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], ws: devnet.wsUrl, preconfWs: devnet.wsUrl },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock, label: "devnet USDC" }],
    // anvil's safe/finalized tags trail the head by 32/64 blocks: a depth follows the devnet closer.
    finality: { depth: 10 },
    database: { path: "data/devnet-standalone.db" },
    registration: { baseUrl: registration.url, wallets: agents },
  };
  if (writeConfigPath !== undefined)
    writeFileSync(writeConfigPath, `${JSON.stringify(ready, null, 2)}\n`, { flag: "wx" });
  console.log(`flashindex devnet (a local stand-in for Base with Flashblocks; not Base)
  HTTP JSON-RPC  ${devnet.httpUrl}
  WebSocket      ${devnet.wsUrl}
  chain id       ${devnet.chainId}
  builder codes  ${registration.url}/v1/agents/builder-codes (stand-in for api.base.dev)
  test token     ${devnet.token} (EIP-3009, 6 decimals, deployed in block ${devnet.tokenDeployBlock})
  funded keys (anvil's public test mnemonic; never use them elsewhere):`);
  devnet.privateKeys.forEach((key, i) =>
    console.log(`    ${i}  ${privateKeyToAccount(key).address}  ${key}`),
  );
  console.log(
    writeConfigPath === undefined
      ? `\nA config for a daemon on this devnet ('flashindex start --config FILE', or pass --write-config FILE):\n${JSON.stringify(ready, null, 2)}`
      : `\nWrote a config for a daemon on this devnet to ${writeConfigPath}: run 'flashindex start --config ${writeConfigPath}'`,
  );
  await new Promise<void>((resolve) =>
    shutdown.signal.addEventListener("abort", () => resolve(), { once: true }),
  );
}
