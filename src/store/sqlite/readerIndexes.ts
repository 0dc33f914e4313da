import type { Database } from "better-sqlite3";

/**
 * Indexes that serve readers (payments by token, payer or payee in block order, logs and authorization events by transaction,
 * attribution codes by code) and
 * that the writer itself never needs. Most keys are random (addresses, hashes), so maintaining them
 * row by row is the dearest part of an insert (and even the ordered one by token and block costs a
 * seventh of it); a long backfill drops them and builds each once, sorted, at its end. `CREATE INDEX IF NOT EXISTS` makes the build idempotent: a backfill killed before it
 * leaves them missing, and the next backfill (every `start` runs one) builds them.
 */
export const READER_INDEXES: ReadonlyArray<{ name: string; sql: string }> = [
  { name: "transfers_by_token_block", sql: "CREATE INDEX IF NOT EXISTS transfers_by_token_block ON transfers (token, block_number)" },
  { name: "transfers_by_from", sql: "CREATE INDEX IF NOT EXISTS transfers_by_from ON transfers (from_address, block_number)" },
  { name: "transfers_by_to", sql: "CREATE INDEX IF NOT EXISTS transfers_by_to ON transfers (to_address, block_number)" },
  { name: "logs_by_tx", sql: "CREATE INDEX IF NOT EXISTS logs_by_tx ON logs (tx_hash)" },
  { name: "authorization_events_by_tx", sql: "CREATE INDEX IF NOT EXISTS authorization_events_by_tx ON authorization_events (tx_hash)" },
  { name: "attribution_codes_by_code", sql: "CREATE INDEX IF NOT EXISTS attribution_codes_by_code ON attribution_codes (code)" },
];

/**
 * Helper threads SQLite may sort with while it builds an index (PRAGMA threads; 0 is its default).
 * Measured in `flashindex backfill` of 1,000,000 logs: the indexes built in 2.4–2.5 s instead of 2.7–2.8 s.
 */
const SORT_HELPER_THREADS = 2;

export function createReaderIndexes(db: Database) {
  const present = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?").pluck();
  return {
    /** Names of the reader indexes that do not exist right now. */
    missing: (): string[] => READER_INDEXES.filter((i) => present.get(i.name) === undefined).map((i) => i.name),
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
