import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import DatabaseConstructor, { type Database } from "better-sqlite3";
import { ConfigError } from "../errors.js";
import { migrate } from "./migrations.js";

export type { Database };

/** Readers (the sqlite3 shell, dashboards) wait up to this long for our write lock instead of failing. */
export const BUSY_TIMEOUT_MS = 5_000;
/** SQLite page cache of the writer connection, in KiB. */
export const CACHE_SIZE_KIB = 32 * 1024;
/** WAL pages before an automatic checkpoint (SQLite's default is 1,000). */
export const WAL_AUTOCHECKPOINT_PAGES = 1_000;
/** The WAL file is truncated to this after a checkpoint. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Opens (creating when absent) the SQLite file in WAL mode, runs the migrations, and pins the file
 * to one chain: a database filled from one chain is never silently mixed with another.
 */
export function openDatabase(path: string, chainId: number): Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseConstructor(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma("journal_mode = WAL");
    // WAL + NORMAL: a process crash never loses a committed transaction; only power loss may.
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    // Index pages of random hashes are touched all over: a larger page cache saves re-reading them.
    db.pragma(`cache_size = -${CACHE_SIZE_KIB}`);
    db.pragma("temp_store = MEMORY");
    // Checkpoint less often: index pages rewritten by many windows are copied back once, not each time.
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    migrate(db);
    pinChainId(db, chainId, path);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function pinChainId(db: Database, chainId: number, path: string): void {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'chain_id'").get() as { value: string } | undefined;
  if (row === undefined) {
    db.prepare("INSERT INTO meta (key, value) VALUES ('chain_id', ?)").run(String(chainId));
  } else if (row.value !== String(chainId)) {
    throw new ConfigError(
      "chainId",
      `config says ${chainId} but database ${path} holds chain ${row.value}; use another database.path`,
    );
  }
}
