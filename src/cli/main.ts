#!/usr/bin/env -S node --max-old-space-size=160 --max-semi-space-size=4
// The heap limits above are part of flashindex's memory budget (peak RSS under 256 MB on a long
// backfill): without them V8 sizes the heap on the machine's memory and lets garbage pile up
// (over 1 GB RSS for a live set of about 30 MB); a 4 MB nursery saves another ~20 MB at no
// measurable cost. The npm scripts and the Docker image run this file through its shebang, so the
// limits apply however flashindex is started.
import { BaseError, EXIT_USAGE, ShutdownError, UsageError, exitCodeOf } from "../errors.js";
import { pino } from "pino";
import { LOG_LEVELS, type LogLevel } from "../config/types.js";
import { createLogger, type Logger } from "../ops/logger.js";
import { redactText } from "../ops/redact.js";
import { createShutdown, type Shutdown } from "../ops/shutdown.js";
import { authCommand, AUTH_HELP } from "./commands/authCommand.js";
import { backfillCommand, BACKFILL_HELP } from "./commands/backfillCommand.js";
import { cancelCommand, CANCEL_HELP } from "./commands/cancelCommand.js";
import { devnetCommand, DEVNET_HELP } from "./commands/devnetCommand.js";
import { orderCommand, ORDER_HELP } from "./commands/orderCommand.js";
import { registerCommand, REGISTER_HELP } from "./commands/registerCommand.js";
import { startCommand, START_HELP } from "./commands/startCommand.js";
import { statusCommand, STATUS_HELP } from "./commands/statusCommand.js";
import { webhooksCommand, WEBHOOKS_HELP } from "./commands/webhooksCommand.js";
import { jsonError } from "./output.js";

/** After the first SIGINT/SIGTERM, work has this long to finish before the process exits anyway. */
export const SHUTDOWN_GRACE_MS = 15_000;

type Command = { run: (args: string[], shutdown: Shutdown) => Promise<void>; summary: string; help: string };

const COMMANDS: Record<string, Command> = {
  start: { run: startCommand, summary: "run the daemon: backfill, then keep up with the chain", help: START_HELP },
  backfill: { run: backfillCommand, summary: "index a block range once and exit", help: BACKFILL_HELP },
  status: { run: statusCommand, summary: "show checkpoints, head, lag and row counts", help: STATUS_HELP },
  devnet: { run: devnetCommand, summary: "run the bundled local Base stand-in (anvil + Flashblocks front)", help: DEVNET_HELP },
  register: { run: registerCommand, summary: "register an agent wallet for a builder code and store it", help: REGISTER_HELP },
  auth: { run: authCommand, summary: "show an authorization's indexed state against the contract's", help: AUTH_HELP },
  order: { run: orderCommand, summary: "add, void, show and list merchant orders (signed authorizations)", help: ORDER_HELP },
  cancel: { run: cancelCommand, summary: "relay a buyer's cancelAuthorization on chain (or --dry-run: compare voiding costs)", help: CANCEL_HELP },
  webhooks: { run: webhooksCommand, summary: "list pending and parked webhook deliveries, re-send parked ones", help: WEBHOOKS_HELP },
};

const USAGE = `Usage: flashindex <command> [options]

Indexes EIP-3009 stablecoin payments on Base into one SQLite file.

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`)
  .join("\n")}

Run 'flashindex <command> --help' for a command's options.`;

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const command = name === "help" && args[0] !== undefined ? COMMANDS[args[0]] : undefined;
    console.log(command?.help ?? USAGE);
    return 0;
  }
  const command = COMMANDS[name];
  const shutdown = createShutdown();
  const removeHandlers = handleSignals(shutdown, noticeLogger(name, args));
  try {
    if (command === undefined) throw new UsageError(`unknown command '${name}'\n\n${USAGE}`);
    await command.run(args, shutdown);
    return 0;
  } catch (error) {
    return report(error, wantsJson(args));
  } finally {
    removeHandlers();
    await shutdown.kill();
  }
}

/** `--json` among a command's flags (before a `--`): its errors are then one JSON document too. */
function wantsJson(args: string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).includes("--json");
}

/**
 * One line for a user's mistake or a known failure; a stack trace only for a bug of ours. Under
 * --json the error is the one JSON document on stdout, `{"error": {"code", "message"}}`.
 */
function report(error: unknown, json: boolean): number {
  if (error instanceof ShutdownError) return 0;
  if (json) {
    console.log(JSON.stringify(jsonError(error)));
    return exitCodeOf(error);
  }
  if (error instanceof BaseError) {
    const prefix = error.exitCode === EXIT_USAGE ? "error" : "failed";
    console.error(`flashindex: ${prefix}: ${redactText(error.shortMessage)}`);
  } else {
    console.error(`flashindex: unexpected error: ${redactText(error instanceof Error ? (error.stack ?? error.message) : String(error))}`);
  }
  return exitCodeOf(error);
}

/**
 * The logger for what the entry point itself has to say (signals): JSON lines like every other log,
 * on the command's log stream (stdout for the daemon, stderr for one-shot commands), at the level
 * of --log-level or FLASHINDEX_LOG_LEVEL. A terminal gets one plain line instead.
 */
function noticeLogger(command: string | undefined, args: string[]): Logger | undefined {
  const toStdout = command === "start";
  if ((toStdout ? process.stdout : process.stderr).isTTY) return undefined;
  const flag = args.indexOf("--log-level");
  const wanted = (flag === -1 ? undefined : args[flag + 1]) ?? process.env.FLASHINDEX_LOG_LEVEL ?? "info";
  const level: LogLevel = (LOG_LEVELS as readonly string[]).includes(wanted) ? (wanted as LogLevel) : "info";
  return createLogger(level, pino.destination({ dest: toStdout ? 1 : 2, sync: true })).child({ component: "cli" });
}

/** First signal: shut down gracefully within SHUTDOWN_GRACE_MS. Second signal: exit at once. */
function handleSignals(shutdown: Shutdown, logger: Logger | undefined): () => void {
  let signals = 0;
  const notice = (level: "info" | "warn" | "error", msg: string, text: string, fields: Record<string, unknown>) => {
    if (logger === undefined) console.error(`flashindex: ${text}`);
    else logger[level]({ msg, ...fields });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      notice("warn", "Received a second signal, exited at once", `${signal} again, exiting now`, { signal });
      process.exit(130);
    }
    notice("info", "Received a signal, shutting down (send again to force)", `${signal} received, shutting down (send again to force)`, { signal, grace_ms: SHUTDOWN_GRACE_MS });
    setTimeout(() => {
      notice("error", "Exited after the shutdown grace period", `shutdown took over ${SHUTDOWN_GRACE_MS} ms, exiting`, { grace_ms: SHUTDOWN_GRACE_MS });
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    void shutdown.kill();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
