import type pg from "pg";
import type { Hex } from "viem";
import { createPostgresSyncedRanges } from "./syncedRanges.js";
import type { StatusSnapshot, StatusTokens } from "../types.js";
import {
  LEAD_TIME_MAX_BLOCKS,
  LEAD_TIME_WINDOW_MS,
  RECENT_PAYMENTS,
  RECENT_REMOVALS,
  tokenProgress,
} from "../statusSnapshotLimits.js";

/**
 * What the status page shows from a Postgres schema: the reads of sqlite/statusSnapshot.ts, each
 * bounded by an index, on one pooled connection (the webhook counts come from the outbox).
 */
export async function readPostgresStatusSnapshot(
  c: pg.ClientBase,
  chainId: number,
  tokens: StatusTokens,
  now: number,
): Promise<Omit<StatusSnapshot, "webhooks" | "webhookAttempts">> {
  const ranges = createPostgresSyncedRanges(c, chainId);
  const progress = [];
  for (const t of tokens)
    progress.push(
      tokenProgress(t, await ranges.checkpoint(t.address.toLowerCase() as Hex, t.startBlock)),
    );
  const newestBlock =
    ((await c.query("SELECT MAX(block_number) AS n FROM logs")).rows[0].n as number | null) ?? null;
  const leadTimesMs =
    newestBlock === null
      ? []
      : (
          await c.query(
            `SELECT confirmed_at - preconfirmed_at AS ms FROM logs
             WHERE block_number >= $1 AND preconfirmed_at IS NOT NULL AND confirmed_at >= $2 AND status IN ('confirmed', 'finalized')`,
            [newestBlock - LEAD_TIME_MAX_BLOCKS, now - LEAD_TIME_WINDOW_MS],
          )
        ).rows.map((r: { ms: number }) => r.ms);
  const payments = (
    await c.query(
      `SELECT t.token, t.from_address AS "from", t.to_address AS "to", t.value::text AS value, t.status, t.block_number AS "blockNumber", t.tx_hash AS "txHash",
         (SELECT string_agg(c.code, ', ') FROM attribution_codes c WHERE c.tx_hash = t.tx_hash) AS codes
       FROM transfers t ORDER BY t.log_id DESC LIMIT $1`,
      [RECENT_PAYMENTS],
    )
  ).rows as StatusSnapshot["payments"];
  const removals = (
    await c.query(
      `SELECT status, block_number AS "blockNumber", tx_hash AS "txHash", removed_at AS "removedAt" FROM logs
       WHERE removed_at IS NOT NULL ORDER BY removed_at DESC LIMIT $1`,
      [RECENT_REMOVALS],
    )
  ).rows as StatusSnapshot["removals"];
  const orders = (
    await c.query("SELECT state, COUNT(*)::int AS n FROM orders GROUP BY state ORDER BY state")
  ).rows as StatusSnapshot["orders"];
  const voidedThenCaptured = Number(
    (await c.query("SELECT COUNT(*)::int AS n FROM orders WHERE voided_then_captured")).rows[0].n,
  );
  const attributionOwedBlocks = Number(
    (await c.query("SELECT COUNT(*)::int AS n FROM attribution_owed")).rows[0].n,
  );
  return {
    tokens: progress,
    newestBlock,
    leadTimesMs,
    payments,
    removals,
    orders,
    voidedThenCaptured,
    attributionOwedBlocks,
  };
}
