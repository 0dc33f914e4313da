import type { Database } from "better-sqlite3";

/**
 * Schema version 5: the unique key of `logs` leads with the block number,
 * UNIQUE (block_number, log_index, tx_hash, block_hash), instead of the block hash. Same uniqueness;
 * but a backfill writes block numbers in ascending order, so the key's b-tree grows at its end
 * instead of at random pages (hashes are random), half again as fast, and the gap widens as the
 * table grows (`schema-v5-appending-key` in scripts/bench/results/measurements.csv). Lookups by
 * block hash always know the number.
 *
 * SQLite cannot change a table constraint in place: the table is rebuilt (SQLite's documented
 * procedure), and every view and trigger is dropped first and re-created from its stored SQL after,
 * so this step carries no copy of definitions that later steps may change.
 */
export function migrateToV5(db: Database): void {
  const dependents = db
    .prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'trigger') AND sql IS NOT NULL ORDER BY rowid",
    )
    .all() as Array<{ type: "view" | "trigger"; name: string; sql: string }>;
  for (const { type, name } of [...dependents].reverse())
    db.exec(`DROP ${type.toUpperCase()} IF EXISTS "${name}"`);
  const indexes = db
    .prepare(
      "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'logs' AND sql IS NOT NULL ORDER BY rowid",
    )
    .pluck()
    .all() as string[];
  const table = db
    .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'logs'")
    .pluck()
    .get() as string;
  const rebuilt = table
    .replace(/^CREATE TABLE "?logs"?/, "CREATE TABLE logs_v5")
    .replace(
      "UNIQUE (block_hash, log_index, block_number, tx_hash)",
      "UNIQUE (block_number, log_index, tx_hash, block_hash)",
    );
  if (
    rebuilt === table ||
    !rebuilt.includes("UNIQUE (block_number, log_index, tx_hash, block_hash)")
  )
    throw new Error("schema v5: the logs table does not have the expected shape");
  db.exec(rebuilt);
  db.exec("INSERT INTO logs_v5 SELECT * FROM logs");
  db.exec("DROP TABLE logs");
  db.exec("ALTER TABLE logs_v5 RENAME TO logs");
  for (const sql of indexes) db.exec(sql);
  for (const { sql } of dependents) db.exec(sql);
}
