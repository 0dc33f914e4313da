import type { Database } from "better-sqlite3";
import { READER_INDEXES } from "../readerIndexDefinitions.js";

/**
 * Helper threads SQLite may sort with while it builds an index (PRAGMA threads; 0 is its default).
 * Two helpers build the indexes about a tenth faster than none (`reader-index-sort-threads` in
 * scripts/bench/results/measurements.csv).
 */
const SORT_HELPER_THREADS = 2;

export function createSqliteReaderIndexes(db: Database) {
  const present = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?")
    .pluck();
  return {
    /** Names of the reader indexes that do not exist right now. */
    missing: (): string[] =>
      READER_INDEXES.filter((i) => present.get(i.name) === undefined).map((i) => i.name),
    /** Drops them all in one transaction (a bulk load is about to start). */
    drop(): void {
      db.transaction(() => {
        for (const index of READER_INDEXES) db.exec(`DROP INDEX IF EXISTS ${index.name}`);
      }).immediate();
    },
    /**
     * Builds the first missing one in its own transaction and returns its name (undefined when none
     * is missing): the caller serves other work between indexes, each a fraction of a second to
     * seconds on millions of rows. The sort spills to a temporary file (sortingOnDisk).
     */
    buildNext(): string | undefined {
      const index = READER_INDEXES.find((i) => present.get(i.name) === undefined);
      if (index === undefined) return undefined;
      sortingOnDisk(db, () => db.transaction(() => db.exec(index.sql)).immediate());
      return index.name;
    },
  };
}

/**
 * Runs `work` (a sort over millions of rows: an index build, staged attribution's move) with its
 * sorts spilling to a temporary file, not to memory (it would lift peak RSS by the size of the
 * keys), and with SORT_HELPER_THREADS helper threads. Outside a transaction: both settings apply
 * to the next statements.
 */
export function sortingOnDisk<T>(db: Database, work: () => T): T {
  const tempStore = db.pragma("temp_store", { simple: true }) as number;
  const threads = db.pragma("threads", { simple: true }) as number;
  db.pragma("temp_store = FILE");
  db.pragma(`threads = ${SORT_HELPER_THREADS}`);
  try {
    return work();
  } finally {
    db.pragma(`temp_store = ${tempStore}`);
    db.pragma(`threads = ${threads}`);
  }
}
