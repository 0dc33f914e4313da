import { FatalError, UsageError } from "../../errors/base.js";
import { redactUrl } from "../../ops/redact.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openReadOnlyStore, openStore } from "../../store/openStore.js";
import type { DeliveryListing } from "../../store/types.js";
import { eventId } from "../../webhooks/eventBody.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { createStoreContext } from "../context.js";
import { printJson } from "../output.js";

/** Most deliveries `webhooks list` prints. */
export const WEBHOOKS_LIST_LIMIT = 1_000;

const OPTIONS = {
  all: { type: "boolean", description: "(retry) every parked delivery" },
  json: { type: "boolean", description: "print one JSON document instead of text" },
} as const;

export const WEBHOOKS_COMMAND = defineCommand({
  name: "webhooks",
  summary: "list pending and parked webhook deliveries, re-send parked ones",
  usage: "<list|retry> [EVENT_ID | --all] [options]",
  description: `list   shows the webhook deliveries still waiting (pending, with their attempts and next try) and
       the parked ones (every attempt failed: the dead letters), newest event first.
retry  puts parked deliveries back in the queue with a fresh set of attempts: one event (its id as
       in the Flashindex-Event-Id header, evt_<chain>_<n>, or just n) or --all. A running daemon
       sends them within a moment; otherwise the next start does. An event id with no parked
       delivery exits 1. Needs only the database (no RPC, no running devnet). Logs go to stderr.`,
  options: OPTIONS,
  positionals: true,
  epilog: "Exit codes: 0 done, 1 no parked delivery of that event, 2 bad usage or config.",
  run: runWebhooksCommand,
});

async function runWebhooksCommand(
  { values, positionals }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  const [action, target, ...extra] = positionals;
  if (action !== "list" && action !== "retry")
    throw new UsageError(
      `webhooks: expected list or retry, got ${JSON.stringify(action ?? "")} (see flashindex webhooks --help)`,
    );
  if (extra.length > 0)
    throw new UsageError(`webhooks: unexpected argument ${JSON.stringify(extra[0])}`);
  const { config, metrics } = createStoreContext(values, shutdown);
  if (action === "list") {
    if (target !== undefined || values.all)
      throw new UsageError("webhooks list: takes no event id or --all");
    const store = await openReadOnlyStore(config, metrics);
    try {
      const rows = (await store.webhooks.list(["pending", "parked"], WEBHOOKS_LIST_LIMIT)).map(
        (row) => describe(config.chainId, row),
      );
      if (values.json) return printJson({ deliveries: rows });
      if (rows.length === 0) return void console.log("no pending or parked webhook deliveries");
      for (const r of rows)
        console.log(
          `${r.state.padEnd(7)} ${r.eventId.padEnd(18)} ${r.type.padEnd(22)} attempts ${String(r.attempts).padStart(3)}  ${r.url}${r.lastError === null ? "" : `  last error: ${r.lastError}`}`,
        );
      return;
    } finally {
      await store.close();
    }
  }
  const which = parseTarget(target, values.all === true, config.chainId);
  const store = await openStore(config, { metrics: metrics });
  try {
    const requeued = await store.webhooks.requeue(which, Date.now());
    if (requeued === 0 && which !== "all")
      throw new FatalError(
        `webhooks retry: no parked delivery of ${eventId(config.chainId, which)} (see flashindex webhooks list)`,
      );
    if (values.json) return printJson({ requeued });
    console.log(`re-queued ${requeued} parked deliver${requeued === 1 ? "y" : "ies"}`);
  } finally {
    await store.close();
  }
}

function describe(chainId: number, row: DeliveryListing) {
  return {
    eventId: eventId(chainId, row.eventId),
    type: row.type,
    state: row.state,
    subscriptionId: row.subscriptionId,
    url: redactUrl(row.url),
    attempts: row.attempts,
    lastError: row.lastError,
    nextAttemptAt: row.state === "pending" ? new Date(row.nextAttemptAt).toISOString() : null,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

/** `evt_<chain>_<n>`, `n`, or --all. */
function parseTarget(target: string | undefined, all: boolean, chainId: number): number | "all" {
  if (all && target !== undefined)
    throw new UsageError("webhooks retry: give an event id or --all, not both");
  if (all) return "all";
  if (target === undefined)
    throw new UsageError("webhooks retry: expected an event id (evt_<chain>_<n>) or --all");
  const match = /^(?:evt_(\d+)_)?([1-9]\d*)$/.exec(target);
  if (match === null || !Number.isSafeInteger(Number(match[2])))
    throw new UsageError(
      `webhooks retry: expected an event id like evt_${chainId}_42, got ${JSON.stringify(target)}`,
    );
  if (match[1] !== undefined && Number(match[1]) !== chainId)
    throw new UsageError(
      `webhooks retry: ${target} is an event of chain ${match[1]}, this database holds chain ${chainId}`,
    );
  return Number(match[2]);
}
