import type { StatusSnapshot, StatusTokens } from "./types.js";

/* What the status page reads from the database, bounded alike on both backends. */

/** Lead times are read from at most this many blocks below the newest (2 h of Base blocks), then cut to the last hour. */
export const LEAD_TIME_MAX_BLOCKS = 3_600;
export const LEAD_TIME_WINDOW_MS = 3_600_000;
export const RECENT_PAYMENTS = 20;
export const RECENT_REMOVALS = 20;
export const RECENT_WEBHOOK_ATTEMPTS = 10;

/** A token's backfill progress: its checkpoint, or null before its first indexed block. */
export function tokenProgress(
  t: StatusTokens[number],
  checkpoint: number,
): StatusSnapshot["tokens"][number] {
  return {
    token: t.address,
    label: t.label ?? null,
    startBlock: t.startBlock,
    checkpoint: checkpoint < t.startBlock ? null : checkpoint,
  };
}
