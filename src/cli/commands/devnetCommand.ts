import { privateKeyToAccount } from "viem/accounts";
import type { Shutdown } from "../../ops/shutdown.js";
import { pino } from "pino";
import { UsageError } from "../../errors.js";
import { loadSettings } from "../../config/loadConfig.js";
import { LOG_LEVELS, type LogLevel } from "../../config/types.js";
import { asListenError } from "../../ops/listenErrors.js";
import { createLogger } from "../../ops/logger.js";
import { parseCommandArgs } from "../args.js";

export const DEVNET_HELP = `Usage: flashindex devnet [options]

Runs the bundled local Base stand-in on its own: anvil (chain id 8453) behind a Flashblocks-compatible
JSON-RPC front (HTTP and WebSocket on one port) with the EIP-3009 test token deployed and funded.
Prints its URLs, the token address and the funded keys, then runs until Ctrl-C.

Options:
  --port N              port of the front (default 8545; 0 picks a free one)
  --block-time-ms N     canonical block every N ms (default 2000; 0: only on devnet_mine)
  --flashblock-ms N     flashblock every N ms (default 200; 0: only on devnet_flashblock)
  --payments N          demo payments per second (default 0: none)
  --pending-logs SHAPE  "single" (one log per notification, default) or "array" (v0.3.0/v0.4.0 nodes)
  -c, --config PATH     take the defaults of the flags above from the file's devnet section
                        (devnet.port, blockTimeMs, flashblockIntervalMs, paymentsPerSecond) and its logLevel
  --log-level LEVEL     trace, debug, info, warn, error, fatal or silent (its logs go to stderr)
  -h, --help            show this help

--db does not apply: this devnet keeps no database, and starts a new chain every run.

Admin methods: devnet_mine, devnet_flashblock, devnet_reorg(depth), devnet_dropPreconfirmed(txHash),
devnet_disconnectWebSockets(), devnet_setFaults({ errorRate, latencyMs, maxBlockRange, maxResults }),
devnet_setPendingLogsMode({ shape, repeat }).`;

/** --log-level without a config: one of LOG_LEVELS, else a usage error (exit 2). */
function readLogLevel(value: string | undefined): LogLevel {
  if (value === undefined) return "info";
  if (!(LOG_LEVELS as readonly string[]).includes(value)) throw new UsageError(`--log-level: expected one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(value)}`);
  return value as LogLevel;
}

function intFlag(name: string, value: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > max)
    throw new UsageError(`${name}: expected a whole number from 0 to ${max}, got ${JSON.stringify(value)}`);
  return Number(value);
}

export async function devnetCommand(args: string[], shutdown: Shutdown): Promise<void> {
  const { values } = parseCommandArgs("devnet", args, {
    port: { type: "string" },
    "block-time-ms": { type: "string" },
    "flashblock-ms": { type: "string" },
    payments: { type: "string" },
    "pending-logs": { type: "string" },
  });
  if (values.help) return void console.log(DEVNET_HELP);
  if (values.db !== undefined)
    throw new UsageError("devnet: --db does not apply: the standalone devnet keeps no database and starts a new chain every run (see flashindex devnet --help)");
  // With --config, the file's devnet section gives the defaults (flags still win); the logs follow its level.
  const config = values.config === undefined ? undefined : loadSettings(values.config, { logLevel: values["log-level"] });
  const defaults = config?.devnet;
  const logger = createLogger(config?.logLevel ?? readLogLevel(values["log-level"]), pino.destination({ dest: 2, sync: false })).child({ component: "devnet" });
  shutdown.add(() => logger.flush());
  const shape = values["pending-logs"] ?? "single";
  if (shape !== "single" && shape !== "array") throw new UsageError(`--pending-logs: expected single or array, got ${JSON.stringify(shape)}`);
  const { startDevnet } = await import("../../devnet/startDevnet.js");
  const { startDemoTraffic } = await import("../../devnet/demoTraffic.js");
  const { startRegistrationStandIn } = await import("../../devnet/registrationStandIn.js");
  const port = intFlag("--port", values.port, defaults?.port ?? 8545, 65_535);
  const devnet = await startDevnet({
    port,
    blockTimeMs: intFlag("--block-time-ms", values["block-time-ms"], defaults?.blockTimeMs ?? 2_000),
    flashblockIntervalMs: intFlag("--flashblock-ms", values["flashblock-ms"], defaults?.flashblockIntervalMs ?? 200),
    pendingLogs: { shape, repeat: false },
    onError: (error) => logger.warn({ msg: "Devnet hiccup", error: (error as Error).message }),
  }).catch((error: unknown) => {
    throw asListenError(error, { host: "127.0.0.1", port, key: "--port" });
  });
  const traffic = startDemoTraffic(devnet, { paymentsPerSecond: intFlag("--payments", values.payments, defaults?.paymentsPerSecond ?? 0) });
  const registration = await startRegistrationStandIn({});
  console.log(`flashindex devnet (a local stand-in for Base with Flashblocks; not Base)
  HTTP JSON-RPC  ${devnet.httpUrl}
  WebSocket      ${devnet.wsUrl}
  chain id       ${devnet.chainId}
  builder codes  ${registration.url}/v1/agents/builder-codes (stand-in for api.base.dev)
  test token     ${devnet.token} (EIP-3009, 6 decimals, deployed in block ${devnet.tokenDeployBlock})
  funded keys (anvil's public test mnemonic; never use them elsewhere):`);
  devnet.privateKeys.forEach((key, i) => console.log(`    ${i}  ${privateKeyToAccount(key).address}  ${key}`));
  await new Promise<void>((resolve) => shutdown.signal.addEventListener("abort", () => resolve(), { once: true }));
  traffic.stop();
  await registration.close();
  await devnet.stop();
}
