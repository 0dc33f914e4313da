import { UsageError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { acquireStoreWriterLock } from "../../store/openStore.js";
import type { WriterLock } from "../../store/types.js";
import { backfill } from "../../sync/historical/backfill.js";
import { createSyncDeps } from "../../sync/syncDeps.js";
import { createTrailingAttribution } from "../../attribution/trailingAttribution.js";
import { parseBlockNumber } from "../blockNumberFlag.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { printJson } from "../output.js";
import { createTerminalProgress } from "../progressBar.js";
import { createContext } from "../context.js";
import { openIndex } from "../openIndex.js";
import type { Common } from "../../common.js";

const OPTIONS = {
  from: {
    type: "string",
    value: "N",
    description: "first block (default: each token's startBlock)",
  },
  to: {
    type: "string",
    value: "M",
    description: "last block (default: the last block the configured finality calls final)",
  },
  json: {
    type: "boolean",
    description: "print the summary as one JSON object (logs go to stderr either way)",
  },
} as const;

export const BACKFILL_COMMAND = defineCommand({
  name: "backfill",
  summary: "index a block range once and exit",
  usage: "[--from N] [--to M] [options]",
  description: `Indexes blocks N..M once and exits. Blocks already indexed are skipped, so the command is safe
to repeat and to interrupt (Ctrl-C finishes the window being written and exits 0). Refused (exit 2)
while another start or backfill writes the same database, and for a database that is not
flashindex's or that was filled from another chain. Behind a provider that limits the rate, the logs
are stored first and their builder-code attribution is read after them, before it exits.`,
  options: OPTIONS,
  epilog:
    "Exit codes: 0 done, 2 bad usage or config (also: database busy, foreign or from another chain), 1 fatal error, 75 temporary failure (retry later).",
  run: runBackfillCommand,
});

async function runBackfillCommand(
  { values }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  const from = parseBlockNumber("--from", values.from);
  const requestedTo = parseBlockNumber("--to", values.to);
  if (from !== undefined && requestedTo !== undefined && requestedTo < from)
    throw new UsageError(`--to: ${requestedTo} is below --from ${from}`);

  const context = createContext(values, shutdown);
  const lock = await acquireStoreWriterLock(context.config, "backfill");
  try {
    await runBackfill(context, lock, from, requestedTo, values.json === true);
  } finally {
    lock.release();
  }
}

/** Everything `backfill` does while it holds the database's writer lock. */
async function runBackfill(
  context: Common,
  lock: WriterLock,
  from: number | undefined,
  requestedTo: number | undefined,
  json: boolean,
): Promise<void> {
  const { store, tips } = await openIndex(context, {
    lock,
    checkTips: (tips) => {
      if (requestedTo !== undefined && requestedTo > tips.head)
        throw new UsageError(`--to: ${requestedTo} is above the chain head ${tips.head}`);
    },
  });
  const to = requestedTo ?? tips.finalized;
  if (to > tips.finalized)
    context.logger.warn({
      msg: "Backfilling above the finalized block: those rows are stored as confirmed and may be reorged",
      finalized_block: tips.finalized,
      to_block: to,
    });

  try {
    // On a terminal a live bar replaces the periodic JSON progress line (logs stay JSON either way).
    const display = process.stderr.isTTY ? createTerminalProgress(process.stderr) : undefined;
    const deps = createSyncDeps(context, store);
    let summary;
    try {
      // A batch the user waits for: a bulk load's attribution is staged and moved into place at its end.
      summary = await backfill(
        deps,
        { from, to, finalized: tips.finalized, head: tips.head, onProgress: display?.update },
        { stageAttribution: true },
      );
    } finally {
      display?.stop();
    }
    // The range is complete at exit: attribution a rate-limited provider left owed (this run's, or a killed one's) is paid first.
    let trailed = { blocks: 0, durationMs: 0 };
    const owed = deps.attributor === undefined ? 0 : await store.owedAttribution.count();
    if (deps.attributor !== undefined && owed > 0) {
      context.logger.info({
        msg: "Backfilled logs; attribution trails",
        logs: summary.logs,
        duration_ms: summary.durationMs,
        owed_blocks: owed,
      });
      const trailing = createTrailingAttribution(
        { ...deps, attributor: deps.attributor },
        { mode: "batch" },
      );
      try {
        trailed = await trailing.payAll();
      } finally {
        await trailing.close();
      }
    }
    if (json)
      printJson({
        toBlock: to,
        blocks: summary.blocks,
        logs: summary.logs,
        durationMs: summary.durationMs,
        trailedBlocks: trailed.blocks,
        trailingMs: trailed.durationMs,
      });
    else
      console.log(
        `Backfilled ${summary.blocks} blocks up to ${to}: ${summary.logs} new logs in ${summary.durationMs} ms` +
          (trailed.blocks > 0
            ? `; attributed ${trailed.blocks} owed blocks in ${trailed.durationMs} ms more`
            : ""),
      );
  } finally {
    await store.close();
  }
}
