import { getChainTips, type ChainTips } from "../../chain/finality.js";
import { BaseError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openReadOnlyStore } from "../../store/openStore.js";
import { createContext } from "../context.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { printJson } from "../output.js";
import { contiguousEnd } from "../../blockRanges.js";
import { memberRanges, tokenCheckpoint, watchMember } from "../../sync/watchScope.js";
import { facilitatorRecordPath, readRunningFacilitator } from "../../settle/facilitatorRecord.js";

const OPTIONS = {
  json: { type: "boolean", description: "print one JSON object instead of text" },
} as const;

export const STATUS_COMMAND = defineCommand({
  name: "status",
  summary: "show checkpoints, head, lag and row counts",
  usage: "[--json] [options]",
  description: `Prints, per configured token: the checkpoint (last block indexed without gaps from its start
block), the chain head and finalized block from the RPC, the lag, and row counts by status.
Reads the database beside a running daemon, and never creates or changes it: a missing
file, or one that is not a flashindex database, exits 2. With a config that runs the bundled
devnet, it reads the devnet the daemon runs for that database (exit 75 when none runs).
Logs go to stderr.`,
  options: OPTIONS,
  run: runStatusCommand,
});

async function runStatusCommand(
  { values }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  const { config, client, metrics } = createContext(values, shutdown);

  let tips: ChainTips | undefined;
  let rpcError: string | undefined;
  try {
    tips = await getChainTips(client, config.finality);
  } catch (error) {
    rpcError = error instanceof BaseError ? error.shortMessage : String(error);
  }
  const store = await openReadOnlyStore(config, metrics);
  try {
    const tokens = [];
    for (const token of config.tokens) {
      const key = token.key;
      const checkpoint = await tokenCheckpoint(store, token);
      // A watched token's ranges are kept per address (sync/watchScope.ts): one added later is still backfilling.
      const watched =
        token.watch === undefined
          ? null
          : await Promise.all(
              token.watch.map(async (address) => {
                const end = contiguousEnd(
                  await memberRanges(store, watchMember(key, address)),
                  token.startBlock,
                );
                return { address, checkpoint: end < token.startBlock ? null : end };
              }),
            );
      tokens.push({
        token: token.address,
        label: token.label ?? null,
        startBlock: token.startBlock,
        checkpoint: checkpoint < token.startBlock ? null : checkpoint,
        lagBlocks:
          tips === undefined
            ? null
            : Math.max(0, tips.head - Math.max(checkpoint, token.startBlock - 1)),
        syncedRanges: await store.syncedRanges(key),
        watched,
        rows: await store.countRowsByStatus(key),
      });
    }
    // The daemon records its x402 facilitator beside a SQLite database while it runs.
    const facilitator =
      config.database.url === undefined
        ? readRunningFacilitator(facilitatorRecordPath(config.database.path))
        : undefined;
    // Blocks a rate-limited backfill stored without their attribution, not read yet (owed_attribution_transfers lists their payments).
    const attributionOwedBlocks = await store.owedAttribution.count();
    const report = {
      chainId: config.chainId,
      database: store.location,
      head: tips?.head ?? null,
      finalized: tips?.finalized ?? null,
      rpcError: rpcError ?? null,
      facilitatorUrl: facilitator?.url ?? null,
      attributionOwedBlocks,
      tokens,
    };
    if (values.json) return printJson(report);
    console.log(
      `chain ${config.chainId}  head ${tips?.head ?? `unavailable (${rpcError})`}  finalized ${tips?.finalized ?? "-"}  database ${store.location}`,
    );
    if (attributionOwedBlocks > 0)
      console.log(
        `attribution trails the logs: ${attributionOwedBlocks} block(s) owed (see the owed_attribution_transfers view)`,
      );
    if (facilitator !== undefined)
      console.log(
        `x402 facilitator ${facilitator.url} (relayer ${facilitator.relayer}, answers when ${facilitator.settleWaitsFor})`,
      );
    for (const t of tokens) {
      console.log(
        `\n${t.label ?? "token"} ${t.token}  start ${t.startBlock}  checkpoint ${t.checkpoint ?? "none"}  lag ${t.lagBlocks ?? "?"} blocks`,
      );
      if (t.syncedRanges.length > 1)
        console.log(
          `  indexed ranges: ${t.syncedRanges.map((r) => `${r.from}-${r.to}`).join(", ")}`,
        );
      if (t.watched !== null) console.log(`  watching ${t.watched.length} address(es) only`);
      // An address behind the others was added to the list later: its history is being fetched.
      const ahead = Math.max(-1, ...(t.watched ?? []).map((w) => w.checkpoint ?? -1));
      for (const w of t.watched ?? [])
        console.log(
          `  watched ${w.address}  checkpoint ${w.checkpoint ?? "none"}${(w.checkpoint ?? -1) < ahead ? "  (backfilling its history)" : ""}`,
        );
      for (const r of t.rows)
        console.log(
          `  ${r.status.padEnd(12)} transfers ${String(r.transfers).padStart(10)}  authorizations ${String(r.authorizations).padStart(8)}`,
        );
      if (t.rows.length === 0) console.log("  no rows yet");
    }
  } finally {
    await store.close();
  }
}
