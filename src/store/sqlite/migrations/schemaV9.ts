import type { Database } from "better-sqlite3";
import { listTestsAsEqualities, UNSETTLED_STATUS_SQL } from "../listTestsAsEqualities.js";

/**
 * Schema version 9: no insert builds a throwaway table to check a value against a list.
 *
 * SQLite evaluates `x IN ('a', 'b', 'c')` (a constant list of more than two values) by building an
 * ephemeral b-tree of the list once per statement execution, and every row the writer inserts is
 * one execution, so each such CHECK, partial-index condition or trigger condition costs every row.
 * A log's insert met three (two CHECKs on `logs` and the condition of `logs_unsettled_by_tx_tail`):
 * about a third of its cost (`schema-v9-no-in-lists` in scripts/bench/results/measurements.csv).
 * The same test written as equalities joined by OR is the same constraint (NULL included) and
 * costs a few comparisons.
 *
 * CHECK constraints and trigger conditions do not shape what is stored, so tables and triggers are
 * rewritten in place, by SQLite's documented procedure for changing a CHECK constraint
 * (https://sqlite.org/lang_altertable.html#otheralter: writable_schema, then a new schema_version
 * so every connection reloads). Stored rows already satisfy the equivalent constraint. The partial
 * index is dropped and built again: its condition decides what it holds. Views are left as they
 * are: a query runs once over many rows. The rewrite itself is listTestsAsEqualities.ts's, which
 * the live statements use too.
 */

export function migrateToV9(db: Database): void {
  const definitions = db
    .prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'trigger') AND sql IS NOT NULL",
    )
    .all() as Array<{ type: string; name: string; sql: string }>;
  const rewritten = definitions
    .map((d) => ({ ...d, next: listTestsAsEqualities(d.sql) }))
    .filter((d) => d.next !== d.sql);
  if (rewritten.length > 0) {
    const version = db.pragma("schema_version", { simple: true }) as number;
    // better-sqlite3 runs in SQLite's defensive mode, which refuses writes to sqlite_master.
    db.unsafeMode(true);
    try {
      db.pragma("writable_schema = ON");
      const update = db.prepare("UPDATE sqlite_master SET sql = ? WHERE type = ? AND name = ?");
      for (const { type, name, next } of rewritten) update.run(next, type, name);
      db.pragma(`schema_version = ${version + 1}`);
    } finally {
      db.pragma("writable_schema = OFF");
      db.unsafeMode(false);
    }
    // Parsed again now: a definition SQLite could not read would fail here, inside the step's transaction.
    for (const { type, name } of rewritten)
      if (type === "table") db.prepare(`SELECT * FROM "${name}" LIMIT 0`).all();
  }
  db.exec(`
    DROP INDEX IF EXISTS logs_unsettled_by_tx_tail;
    CREATE INDEX logs_unsettled_by_tx_tail ON logs (substr(tx_hash, 51, 16)) WHERE ${UNSETTLED_STATUS_SQL};
  `);
}
