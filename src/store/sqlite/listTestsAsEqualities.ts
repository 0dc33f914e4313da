import { UNSETTLED_STATUS_LIST_SQL } from "../liveStatus.js";

/*
 * SQLite evaluates `x IN ('a', 'b', 'c')` (a constant list of more than two values) by building an
 * ephemeral b-tree of the list once per statement execution, which an insert pays for every row
 * where it meets one (a CHECK, a partial index's condition, a trigger's WHEN). The same test written
 * as equalities joined by OR is the same constraint and costs a few comparisons. Schema 9 rewrote the stored
 * definitions this way (migrations/schemaV9.ts); live statements and the webhook triggers use the
 * same rewrite, so their text matches the partial index's condition.
 */

/** A column (or NEW.column) tested against a list of three or more string literals. */
const LONG_LIST_TEST = /([\w.]+) IN \(('[^']*'(?:,\s*'[^']*'){2,})\)/g;

/** `x IN ('a', 'b', 'c')` → `(x = 'a' OR x = 'b' OR x = 'c')`: the same truth value for every x, NULL included. */
export function listTestsAsEqualities(sql: string): string {
  return sql.replace(LONG_LIST_TEST, (_match, column: string, list: string) => {
    const values = list.split(/,\s*/);
    return `(${values.map((value) => `${column} = ${value}`).join(" OR ")})`;
  });
}

/** The statuses that can still change (schema v8's list), as the rewritten index and its lookup write them. */
export const UNSETTLED_STATUS_SQL = listTestsAsEqualities(`status IN ${UNSETTLED_STATUS_LIST_SQL}`);
