#!/usr/bin/env -S node --max-old-space-size=160
// The heap cap above is part of flashindex's memory budget (peak RSS under 256 MB on a long
// backfill): without one V8 sizes the heap on the machine's memory and lets garbage pile up
// (over 1 GB RSS for a live set of about 30 MB). The npm scripts and the Docker image run this file
// through its shebang, so the cap applies however flashindex is started.
import { BaseError, EXIT_USAGE, ShutdownError, UsageError, exitCodeOf } from "../errors.js";
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
  const removeHandlers = handleSignals(shutdown);
  try {
    if (command === undefined) throw new UsageError(`unknown command '${name}'\n\n${USAGE}`);
    await command.run(args, shutdown);
    return 0;
  } catch (error) {
    return report(error);
  } finally {
    removeHandlers();
    await shutdown.kill();
  }
}

/** One line for a user's mistake or a known failure; a stack trace only for a bug of ours. */
function report(error: unknown): number {
  if (error instanceof ShutdownError) return 0;
  if (error instanceof BaseError) {
    const prefix = error.exitCode === EXIT_USAGE ? "error" : "failed";
    console.error(`flashindex: ${prefix}: ${redactText(error.shortMessage)}`);
  } else {
    console.error(`flashindex: unexpected error: ${redactText(error instanceof Error ? (error.stack ?? error.message) : String(error))}`);
  }
  return exitCodeOf(error);
}

/** First signal: shut down gracefully within SHUTDOWN_GRACE_MS. Second signal: exit at once. */
function handleSignals(shutdown: Shutdown): () => void {
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      console.error(`flashindex: ${signal} again, exiting now`);
      process.exit(130);
    }
    console.error(`flashindex: ${signal} received, shutting down (send again to force)`);
    setTimeout(() => {
      console.error(`flashindex: shutdown took over ${SHUTDOWN_GRACE_MS} ms, exiting`);
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
