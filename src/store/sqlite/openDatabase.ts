import { existsSync, statSync } from "node:fs";
import DatabaseConstructor, { type Database } from "better-sqlite3";
import type { Hex } from "viem";
import { ConfigError } from "../../errors/base.js";
import { asDatabasePathError, ensureDatabaseDirectory } from "./databasePathErrors.js";
import { migrate, SCHEMA_VERSION } from "./migrations/migrations.js";
import type { ChainIdentity } from "../types.js";

export type { Database };

/** Readers (the sqlite3 shell, dashboards) wait up to this long for our write lock instead of failing. */
export const BUSY_TIMEOUT_MS = 5_000;
/**
 * SQLite page cache of the main connection, in KiB: live writes and lookups touch few pages. It was
 * 32 MiB, and a backfill's attribution lookups filled it with random pages of `transactions`.
 */
export const CACHE_SIZE_KIB = 8 * 1024;
/**
 * The window writer thread's page cache, in KiB: a bulk load appends in key order, except for
 * attribution's hash keys, which no cache of this order holds anyway: 16 MiB is within a few
 * percent of 32 (`writer-cache-size` in scripts/bench/results/measurements.csv).
 */
export const WINDOW_WRITER_CACHE_SIZE_KIB = 16 * 1024;
/**
 * Page size of a database this opens for the first time (SQLite's default is 4 KiB; a file keeps
 * the size it was created with). A backfill writes every page twice, into the WAL and back, a
 * syscall and a checksum each: fewer, larger pages cost the writer and the checkpointer less CPU.
 * Larger still would make the live path's small commits rewrite more bytes (`page-size` in
 * scripts/bench/results/measurements.csv).
 */
export const NEW_DATABASE_PAGE_SIZE = 16 * 1024;
/** WAL pages before an automatic checkpoint (SQLite's default is 1,000); the store's connection turns it off (walCheckpoints.ts). */
export const WAL_AUTOCHECKPOINT_PAGES = 1_000;
/** The WAL file is truncated to this after a checkpoint. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Opens (creating when absent) the SQLite file in WAL mode, runs the migrations, and pins the file
 * to one chain: a database filled from one chain is never silently mixed with another. With an
 * identity, the genesis hash is checked (and recorded the first time) too. A file that is not a
 * flashindex database is refused before anything is written to it.
 */
export function openDatabase(path: string, chainId: number, identity?: ChainIdentity): Database {
  if (path !== ":memory:") ensureDatabaseDirectory(path);
  const existing = path !== ":memory:" && existsSync(path) && statSync(path).size > 0;
  let db: Database;
  try {
    db = new DatabaseConstructor(path);
  } catch (error) {
    throw asDatabasePathError(error, path);
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    if (existing) {
      checkIsFlashindexFile(db, path);
      // Checked before migrating: a database of another chain is left exactly as it was.
      checkPins(db, path, chainId, identity);
    }
    // Only an empty file takes a page size; the WAL switch below writes the first page.
    if (!existing) db.pragma(`page_size = ${NEW_DATABASE_PAGE_SIZE}`);
    applyWriterPragmas(db);
    migrate(db);
    checkPins(db, path, chainId, identity);
    db.transaction(() => {
      const insert = db.prepare(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
      );
      insert.run("chain_id", String(chainId));
      if (identity !== undefined) insert.run("genesis_hash", identity.genesisHash);
    }).immediate();
    return db;
  } catch (error) {
    db.close();
    throw asDatabasePathError(error, path);
  }
}

/** The settings of a writing connection: WAL, durability, cache and checkpoints (see the constants above). */
export function applyWriterPragmas(db: Database, cacheSizeKib = CACHE_SIZE_KIB): void {
  db.pragma("journal_mode = WAL");
  // WAL + NORMAL: a process crash never loses a committed transaction; only power loss may.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma(`cache_size = -${cacheSizeKib}`);
  db.pragma("temp_store = MEMORY");
  // Checkpoint less often: index pages rewritten by many windows are copied back once, not each time.
  db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
}

/**
 * A second writing connection to a database that `openDatabase` already opened, migrated and pinned
 * in this process (the backfill's window writer thread, the maintenance thread): the same settings,
 * no checks, except that it never checkpoints inside a commit: the checkpointer thread does
 * (checkpointer.ts).
 */
export function openWriterConnection(
  path: string,
  cacheSizeKib = WINDOW_WRITER_CACHE_SIZE_KIB,
): Database {
  const db = new DatabaseConstructor(path, { fileMustExist: true });
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  applyWriterPragmas(db, cacheSizeKib);
  db.pragma("wal_autocheckpoint = 0");
  return db;
}

/** The checkpointer thread's connection to a database already opened in this process: it only checkpoints. */
export function openCheckpointConnection(path: string): Database {
  const db = new DatabaseConstructor(path, { fileMustExist: true });
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  return db;
}

/**
 * Copies the WAL back into the database without holding the write lock (a PASSIVE checkpoint), so
 * other connections keep writing meanwhile. An automatic checkpoint runs inside the COMMIT of
 * whichever connection crosses the threshold, under its lock: with a writer thread adding megabytes
 * per window, that landed on a pre-confirmation's tiny commit and held it for tens of milliseconds.
 */
export function checkpointBeside(db: Database): void {
  db.pragma("wal_checkpoint(PASSIVE)");
}

/**
 * A WAL that every checkpoint so far found growing again (a writer that never pauses: the WAL only
 * starts over when a write begins after a complete checkpoint) is copied back by its writer itself
 * once it passes WAL_SIZE_LIMIT_BYTES, between two windows: what remains is what the checkpointer
 * thread's last run missed, so this is short, and the next window's first write starts the WAL over,
 * cut back to journal_size_limit. A passive checkpoint: a TRUNCATE one blocked every other writer
 * (a live write) for the tens of milliseconds of its copy and fsync.
 */
export function resetWalWhenLarge(db: Database, limitBytes = WAL_SIZE_LIMIT_BYTES): void {
  let size: number;
  try {
    size = statSync(`${db.name}-wal`).size;
  } catch {
    return;
  }
  if (size > limitBytes) db.pragma("wal_checkpoint(PASSIVE)");
}

/**
 * Opens an existing flashindex database for reading only: never creates, migrates or changes
 * anything, and reads beside a running daemon (WAL). A missing file or a foreign one is a
 * ConfigError (exit 2) naming the path.
 */
export function openDatabaseReadOnly(path: string, chainId: number): Database {
  if (path !== ":memory:" && !existsSync(path))
    throw new ConfigError(
      "database.path",
      `${path} does not exist (point --db or database.path at the daemon's database)`,
    );
  let db: Database | undefined;
  try {
    db = new DatabaseConstructor(path, { readonly: true, fileMustExist: true });
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    checkIsFlashindexFile(db, path);
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version < SCHEMA_VERSION)
      throw new ConfigError(
        "database.path",
        `${path} has schema version ${version}, older than ${SCHEMA_VERSION}: run 'flashindex start' or 'backfill' on it once to upgrade it`,
      );
    checkPins(db, path, chainId, undefined);
    return db;
  } catch (error) {
    db?.close();
    throw asDatabasePathError(error, path);
  }
}

/**
 * Refuses (ConfigError, exit 2) an existing file that is not a flashindex database, reading only:
 * writers call it before they put anything (their lock file included) next to it.
 */
export function refuseForeignFile(path: string): void {
  if (path === ":memory:" || !existsSync(path) || statSync(path).size === 0) return;
  let db: Database | undefined;
  try {
    db = new DatabaseConstructor(path, { readonly: true, fileMustExist: true });
    checkIsFlashindexFile(db, path);
  } catch (error) {
    throw asDatabasePathError(error, path);
  } finally {
    db?.close();
  }
}

/** The genesis hash a database is pinned to; undefined for a database that never recorded one. */
export function storedGenesisHash(db: Database): Hex | undefined {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'genesis_hash'").get() as
    { value: string } | undefined;
  return row?.value as Hex | undefined;
}

/**
 * A file with tables but no schema version is some other program's database: flashindex must not
 * add its tables to it. An empty database (no tables) is fine.
 */
function checkIsFlashindexFile(db: Database, path: string): void {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version > 0) return;
  const tables = db.prepare("SELECT COUNT(*) AS n FROM sqlite_master").get() as { n: number };
  if (tables.n > 0)
    throw new ConfigError(
      "database.path",
      `${path} is a SQLite database but not a flashindex one; refusing to touch it (use another database.path)`,
    );
}

function checkPins(
  db: Database,
  path: string,
  chainId: number,
  identity: ChainIdentity | undefined,
): void {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version === 0) return;
  const stored = new Map(
    (
      db
        .prepare("SELECT key, value FROM meta WHERE key IN ('chain_id', 'genesis_hash')")
        .all() as Array<{ key: string; value: string }>
    ).map((r) => [r.key, r.value]),
  );
  const storedChainId = stored.get("chain_id");
  if (storedChainId !== undefined && storedChainId !== String(chainId))
    throw new ConfigError(
      "chainId",
      `config says ${chainId} but database ${path} holds chain ${storedChainId}; use another database.path`,
    );
  const storedGenesis = stored.get("genesis_hash");
  if (
    identity !== undefined &&
    storedGenesis !== undefined &&
    storedGenesis !== identity.genesisHash
  )
    throw new ConfigError(
      "database.path",
      `database ${path} belongs to chain ${chainId} with genesis ${storedGenesis}, but the RPC serves genesis ${identity.genesisHash}; use another database.path`,
    );
}
