#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// A 4 MB nursery is part of flashindex's memory budget (peak RSS under 256 MB on a long backfill:
// it saves about 20 MB at no measurable cost). The old generation is not capped: any
// --max-old-space-size below a few GB lowers V8's heap-growing factor, and with a cap of 160 MB
// the main thread collected its 10–20 MB heap three times as often, which cost pre-confirmation
// latency and backfill throughput (`no-heap-cap` in scripts/bench/results/measurements.csv). Two
// malloc arenas (glibc's default is eight per core): the decode thread reads windows' HTTP answers
// into buffers of its own, and an arena of its own held tens of MB of freed ones (`malloc-arenas`
// there: a lower peak RSS at the same speed). The npm scripts and the Docker image run this file
// through its shebang, so these apply however flashindex is started.
import { BaseError, EXIT_FATAL, EXIT_USAGE, ShutdownError, exitCodeOf } from "../errors/base.js";
import { pino } from "pino";
import { LOG_LEVELS, type LogLevel } from "../config/types.js";
import { exitAtOnce } from "../ops/exitAtOnce.js";
import { createLogger, type Logger } from "../ops/logger.js";
import { redactText } from "../ops/redact.js";
import { createShutdown, type Shutdown } from "../ops/shutdown.js";
import { createStopRequests, REPEAT_WINDOW_MS } from "../ops/stopRequests.js";
import { buildProgram, parseCommand, type CommandDefinition } from "./commandLine.js";
import { unsupportedNodeReason } from "./nodeSupport.js";
import { jsonError } from "./output.js";

/** After the first SIGINT/SIGTERM, work has this long to finish before the process exits anyway. */
export const SHUTDOWN_GRACE_MS = 15_000;

/**
 * Every command, each defined once (options, help and run) in a module of its own, in the order
 * `--help` lists them: the lead merges new ones here. Only the command being run is imported
 * (importing all of them, the devnet and signing ones with viem whole, cost every command about a
 * tenth of a second at start); help and an unknown name load them all.
 */
const COMMANDS: ReadonlyArray<readonly [string, () => Promise<CommandDefinition>]> = [
  ["start", async () => (await import("./commands/startCommand.js")).START_COMMAND],
  ["backfill", async () => (await import("./commands/backfillCommand.js")).BACKFILL_COMMAND],
  ["status", async () => (await import("./commands/statusCommand.js")).STATUS_COMMAND],
  ["devnet", async () => (await import("./commands/devnetCommand.js")).DEVNET_COMMAND],
  ["register", async () => (await import("./commands/registerCommand.js")).REGISTER_COMMAND],
  ["auth", async () => (await import("./commands/authCommand.js")).AUTH_COMMAND],
  ["order", async () => (await import("./commands/orderCommand.js")).ORDER_COMMAND],
  ["cancel", async () => (await import("./commands/cancelCommand.js")).CANCEL_COMMAND],
  ["webhooks", async () => (await import("./commands/webhooksCommand.js")).WEBHOOKS_COMMAND],
];

/** The definition of command `name` alone when it is one; every command's otherwise. */
function loadCommands(name: string | undefined): Promise<CommandDefinition[]> {
  const one = COMMANDS.find(([key]) => key === name);
  return Promise.all((one === undefined ? COMMANDS : [one]).map(([, load]) => load()));
}

async function main(argv: string[]): Promise<number> {
  // Before any command opens a database: on an old Node, better-sqlite3 crashes with no message.
  const unsupported = unsupportedNodeReason();
  if (unsupported !== undefined) {
    console.error(`flashindex: failed: ${unsupported}`);
    return EXIT_FATAL;
  }
  const [name, ...args] = argv;
  const commands = await loadCommands(name);
  const program = buildProgram(commands);
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const command =
      name === "help" && args[0] !== undefined
        ? program.commands.find((c) => c.name() === args[0])
        : undefined;
    process.stdout.write((command ?? program).helpInformation());
    return 0;
  }
  const shutdown = createShutdown();
  const removeHandlers = handleSignals(shutdown, noticeLogger(name, args));
  try {
    const parsed = parseCommand(program, name, args);
    if (parsed.kind === "help") {
      process.stdout.write(parsed.text);
      return 0;
    }
    await commands.find((c) => c.name === name)!.run(parsed, shutdown);
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
    console.error(
      `flashindex: unexpected error: ${redactText(error instanceof Error ? (error.stack ?? error.message) : String(error))}`,
    );
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
  const wanted =
    (flag === -1 ? undefined : args[flag + 1]) ?? process.env.FLASHINDEX_LOG_LEVEL ?? "info";
  const level: LogLevel = (LOG_LEVELS as readonly string[]).includes(wanted)
    ? (wanted as LogLevel)
    : "info";
  return createLogger(level, pino.destination({ dest: toStdout ? 1 : 2, sync: true })).child({
    component: "cli",
  });
}

/**
 * First signal: shut down gracefully within SHUTDOWN_GRACE_MS. The same signal again within
 * REPEAT_WINDOW_MS is a copy of that request (npm's forwarded one, a process-group kill) and changes
 * nothing; a second request after that, or another signal, exits at once.
 */
function handleSignals(shutdown: Shutdown, logger: Logger | undefined): () => void {
  const requests = createStopRequests();
  const windowSeconds = REPEAT_WINDOW_MS / 1_000;
  const notice = (
    level: "debug" | "info" | "warn" | "error",
    msg: string,
    text: string | undefined,
    fields: Record<string, unknown>,
  ) => {
    if (logger !== undefined) logger[level]({ msg, ...fields });
    else if (text !== undefined) console.error(`flashindex: ${text}`);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    const request = requests.classify(signal, performance.now());
    if (request === "copy") {
      notice("debug", "Received the same signal again, one stop request", undefined, {
        signal,
        repeat_window_ms: REPEAT_WINDOW_MS,
      });
      return;
    }
    if (request === "force") {
      notice("warn", "Received a second signal, exited at once", `${signal} again, exiting now`, {
        signal,
      });
      exitAtOnce(signal);
    }
    notice(
      "info",
      `Received a signal, shutting down (send it again after ${windowSeconds} s to force)`,
      `${signal} received, shutting down (send it again after ${windowSeconds} s to force)`,
      { signal, grace_ms: SHUTDOWN_GRACE_MS, repeat_window_ms: REPEAT_WINDOW_MS },
    );
    setTimeout(() => {
      notice(
        "error",
        "Exited after the shutdown grace period",
        `shutdown took over ${SHUTDOWN_GRACE_MS} ms, exiting`,
        { grace_ms: SHUTDOWN_GRACE_MS },
      );
      exitAtOnce(signal);
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
