import type { Hex } from "viem";
import {
  LEAD_TIME_MAX_BLOCKS,
  LEAD_TIME_WINDOW_MS,
  RECENT_PAYMENTS,
  RECENT_REMOVALS,
  tokenProgress,
} from "../statusSnapshotLimits.js";
import type { StatementCache } from "./statementCache.js";
import type { SyncedRanges } from "./syncedRanges.js";
import type { StatusSnapshot, StatusTokens } from "../types.js";

/**
 * What the status page shows from a SQLite database (Postgres: postgres/statusSnapshot.ts), each
 * read bounded by an index (rowid order, partial indexes, a block range): cheap enough to run on
 * every refresh beside a large table. The webhook counts come from the outbox. `statements` and
 * `ranges`: the store connection's.
 */
export function readSqliteStatusSnapshot(
  statements: StatementCache,
  ranges: Pick<SyncedRanges, "checkpoint">,
  tokens: StatusTokens,
  now: number,
): Omit<StatusSnapshot, "webhooks" | "webhookAttempts"> {
  const newestBlock = statements.pluck("SELECT MAX(block_number) FROM logs").get() as number | null;
  const leadTimesMs =
    newestBlock === null
      ? []
      : (statements
          .pluck(
            `SELECT confirmed_at - preconfirmed_at FROM logs
             WHERE block_number >= ? AND preconfirmed_at IS NOT NULL AND confirmed_at >= ? AND status IN ('confirmed', 'finalized')`,
          )
          .all(newestBlock - LEAD_TIME_MAX_BLOCKS, now - LEAD_TIME_WINDOW_MS) as number[]);
  const payments = statements
    .prepare(
      `SELECT t.token, t.from_address AS "from", t.to_address AS "to", t.value, t.status, t.block_number AS blockNumber, t.tx_hash AS txHash,
         (SELECT group_concat(c.code, ', ') FROM attribution_codes c WHERE c.tx_hash = t.tx_hash) AS codes
       FROM transfers t ORDER BY t.log_id DESC LIMIT ?`,
    )
    .all(RECENT_PAYMENTS) as StatusSnapshot["payments"];
  const removals = statements
    .prepare(
      `SELECT status, block_number AS blockNumber, tx_hash AS txHash, removed_at AS removedAt FROM logs
       WHERE removed_at IS NOT NULL ORDER BY removed_at DESC LIMIT ?`,
    )
    .all(RECENT_REMOVALS) as StatusSnapshot["removals"];
  const orders = statements
    .prepare("SELECT state, COUNT(*) AS n FROM orders GROUP BY state ORDER BY state")
    .all() as StatusSnapshot["orders"];
  const voidedThenCaptured = statements
    .pluck(
      "SELECT COUNT(*) FROM orders WHERE state = 'captured' AND offchain_state = 'voided_offchain'",
    )
    .get() as number;
  const attributionOwedBlocks = statements
    .pluck("SELECT COUNT(*) FROM attribution_owed")
    .get() as number;
  return {
    tokens: tokens.map((t) =>
      tokenProgress(t, ranges.checkpoint(t.address.toLowerCase() as Hex, t.startBlock)),
    ),
    newestBlock,
    leadTimesMs,
    payments,
    removals,
    orders,
    voidedThenCaptured,
    attributionOwedBlocks,
  };
}
