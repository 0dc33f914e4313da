import { READER_INDEXES } from "../readerIndexDefinitions.js";
import type { ReaderIndexes } from "../store.js";
import { DEFERRED_FOREIGN_KEYS } from "./deferredForeignKeys.js";
import type { WriteQueue } from "./writeQueue.js";

/**
 * The reader indexes (readerIndexDefinitions.ts) and the foreign keys a bulk load defers
 * (deferredForeignKeys.ts) over Postgres: which are missing, dropping them before a bulk load,
 * building them after it (as SQLite's sqlite/readerIndexes.ts).
 */
export function createPostgresReaderIndexes(queue: WriteQueue): ReaderIndexes {
  const { read, write } = queue;

  /**
   * An index left invalid by an interrupted concurrent build, or a key added but not yet validated,
   * counts as missing.
   */
  const missing = (): Promise<string[]> =>
    read(async (c) => {
      const { rows } = await c.query(
        `SELECT name FROM unnest($1::text[]) AS name
         WHERE NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(name) AND indisvalid)
         UNION ALL
         SELECT name FROM unnest($2::text[]) AS name
         WHERE NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = name AND connamespace = current_schema()::regnamespace AND convalidated)`,
        [READER_INDEXES.map((i) => i.name), DEFERRED_FOREIGN_KEYS.map((k) => k.name)],
      );
      return rows.map((r: { name: string }) => r.name);
    });

  return {
    missing: () => missing(),
    drop: () =>
      write("index_build", async (c) => {
        await c.query(READER_INDEXES.map((i) => `DROP INDEX IF EXISTS ${i.name}`).join("; "));
        await c.query(
          DEFERRED_FOREIGN_KEYS.map(
            (k) => `ALTER TABLE ${k.table} DROP CONSTRAINT IF EXISTS ${k.name}`,
          ).join("; "),
        );
      }),
    /**
     * Beside live writes (the daemon), indexes are built CONCURRENTLY and keys validated under a
     * lock that lets inserts through, outside this process's write queue: pre-confirmations keep
     * landing during a build that may take minutes (only adding a key, NOT VALID and instant, takes
     * a turn in it). Otherwise (`flashindex backfill`, the only writer) each is built in one
     * exclusive write: one table scan instead of two.
     */
    build: async (options = {}) => {
      const built: string[] = [];
      const absent = new Set(await missing());
      const concurrently = options.mode === "daemon";
      const build = (sql: string) =>
        concurrently ? queue.besideWrites(sql) : write("index_build", (c) => c.query(sql));
      for (const index of READER_INDEXES) {
        if (!absent.has(index.name)) continue;
        if (options.signal?.aborted === true) return built;
        // An index a killed concurrent build left invalid is dropped first.
        await build(`DROP INDEX ${concurrently ? "CONCURRENTLY " : ""}IF EXISTS ${index.name}`);
        await build(
          index.sql.replace(
            "CREATE INDEX IF NOT EXISTS",
            concurrently ? "CREATE INDEX CONCURRENTLY" : "CREATE INDEX",
          ),
        );
        built.push(index.name);
      }
      for (const key of DEFERRED_FOREIGN_KEYS) {
        if (!absent.has(key.name)) continue;
        if (options.signal?.aborted === true) return built;
        await write("index_build", async (c) => {
          const present = await c.query(
            "SELECT 1 FROM pg_constraint WHERE conname = $1 AND connamespace = current_schema()::regnamespace",
            [key.name],
          );
          if (present.rows.length === 0)
            await c.query(
              `ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition} NOT VALID`,
            );
        });
        // Checked against every stored row (one join, not a lookup per row): a row without its
        // log fails the build loudly and leaves the key unvalidated, never silently unchecked.
        await build(`ALTER TABLE ${key.table} VALIDATE CONSTRAINT ${key.name}`);
        built.push(key.name);
      }
      return built;
    },
  };
}
