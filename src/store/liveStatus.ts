/**
 * The lifecycle statuses of a row that still stands for a real event (not removed, not dropped), and
 * the order in which one event wins over another for the same nonce. Written once here, used by the
 * schema's views and triggers and by the store's queries.
 */
export const LIVE_STATUSES = ["preconfirmed", "confirmed", "finalized"] as const;

/** `('preconfirmed', 'confirmed', 'finalized')`: the right-hand side of `status IN …`. */
export const LIVE_STATUS_LIST_SQL = `(${LIVE_STATUSES.map((s) => `'${s}'`).join(", ")})`;

/** Ranks a live status for ORDER BY: finalized first, then confirmed, then pre-confirmed. */
export function statusRankSql(column: string): string {
  return `CASE ${column} WHEN 'finalized' THEN 0 WHEN 'confirmed' THEN 1 ELSE 2 END`;
}

/**
 * `('preconfirmed', 'dropped', 'confirmed')`: the statuses a stored row can still leave, as the
 * lookup of a pre-confirmed log's twin and the partial index serving it (schema v8) both write it.
 * The text must stay word for word: SQLite uses a partial index only when the query's WHERE holds
 * the index's condition as written.
 */
export const UNSETTLED_STATUS_LIST_SQL = "('preconfirmed', 'dropped', 'confirmed')";
