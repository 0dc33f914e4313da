import { runDaemon } from "../../daemon.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { loadCommandSettings } from "../resolveConfig.js";

const OPTIONS = {
  standby: {
    type: "boolean",
    description:
      "when another process writes the database, wait and take over once it stops (instead of exiting 2)",
  },
} as const;

export const START_COMMAND = defineCommand({
  name: "start",
  summary: "run the daemon: backfill, then keep up with the chain",
  description: `Runs the daemon: backfills every configured token from its start block, then follows the chain:
new blocks (newHeads over rpc.ws, or polling), reorgs (parent hashes, the logs subscription's
removed flag), and pre-confirmed logs (the "pending" view and the pendingLogs subscription).
Serves /metrics, /healthz and /readyz. SIGINT/SIGTERM finish the write in flight, close the
database and exit 0; the same signal again within 1 s is the same request (npm start forwards
its copy of a Ctrl-C), a second one after that exits at once. On every way out the bundled
devnet's chain is saved before its anvil stops.
One writer per database: while another start or backfill writes the same file, start exits 2 at
once, naming the other process; with --standby it waits instead, and takes over when that one
stops. A database filled from another chain (another chain id or genesis block) is refused with
exit 2 before anything is written.
With a config that runs the bundled devnet, the devnet starts first and its URLs are recorded
beside the database (<database>.endpoints.json) while it runs, for the other commands.
Logs go to stdout as JSON lines.`,
  options: OPTIONS,
  epilog: `Exit codes: 0 stopped by SIGINT/SIGTERM, 2 bad usage or config (also: database busy, foreign or
from another chain), 1 fatal error, 75 temporary failure (the RPC stayed unreachable at start-up; on
Postgres also: another writer took over).`,
  run: runStartCommand,
});

/** Parses the flags and runs the daemon (src/daemon.ts, the composition root) until shutdown. */
async function runStartCommand(
  { values }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  await runDaemon(loadCommandSettings(values), { standby: values.standby === true }, shutdown);
}
