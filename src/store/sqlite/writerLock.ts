import { closeSync, fstatSync, openSync, rmSync, statSync } from "node:fs";
import { hostname } from "node:os";
import DatabaseConstructor, { type Database } from "better-sqlite3";
import { ConfigError } from "../../errors/base.js";
import { WriterBusyError } from "../../errors/store.js";
import { asDatabasePathError, ensureDatabaseDirectory } from "./databasePathErrors.js";
import type { WriterLock } from "../types.js";
import type { WriterHolder } from "../../rows/writerHolder.js";

/** The sidecar file whose SQLite lock stands for "one writer": `data/devnet.db` → `data/devnet.db.lock`. */
export function writerLockPath(databasePath: string): string {
  return `${databasePath}.lock`;
}

/**
 * Takes the one-writer lock of a database file, or throws a ConfigError (exit 2) naming the file and,
 * when it has recorded itself, the other process.
 *
 * Note: Node has no flock. SQLite's unix locks are POSIX fcntl locks, which the kernel drops when
 * the process dies (kill -9 included), so a sidecar SQLite file held in EXCLUSIVE locking mode is
 * a lock that can never go stale. SQLite also refuses a second connection of the same process.
 */
export function acquireWriterLock(databasePath: string, command: string): WriterLock {
  const holder: WriterHolder = {
    pid: process.pid,
    host: hostname(),
    command,
    startedAt: new Date().toISOString(),
  };
  if (databasePath === ":memory:") return { holder, release: () => undefined };
  ensureDatabaseDirectory(databasePath);
  const path = writerLockPath(databasePath);
  // A lock taken on a file that its holder removed on the way out is no lock: take it again.
  for (let attempt = 1; attempt <= 5; attempt += 1) {
    // Opened first and kept open while the lock is held: its inode tells whether the file SQLite
    // locked is still the one at the path. (Closing it earlier would drop SQLite's POSIX lock too.)
    const fd = openLockFile(path);
    let lock: Database;
    try {
      lock = lockFile(databasePath, path);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    if (isFileAt(fd, path)) return { holder, release: releaseOnce(lock, fd, path) };
    lock.close();
    closeSync(fd);
  }
  throw new ConfigError(
    "database.path",
    `${path} keeps changing under this process: is another flashindex starting and stopping in a loop?`,
  );
}

function openLockFile(path: string): number {
  try {
    return openSync(path, "a");
  } catch (error) {
    throw asDatabasePathError(error, path);
  }
}

/** Opens the lock file with SQLite and takes its exclusive lock. */
function lockFile(databasePath: string, path: string): Database {
  let lock: Database;
  try {
    lock = new DatabaseConstructor(path);
  } catch (error) {
    throw asDatabasePathError(error, path);
  }
  try {
    lock.pragma("busy_timeout = 0");
    lock.pragma("locking_mode = EXCLUSIVE");
    // In memory: no -journal file next to the lock; nothing in it needs to survive a crash.
    lock.pragma("journal_mode = MEMORY");
    // Exclusive locking mode takes the write lock at the first write and keeps it until close.
    lock.pragma(`user_version = ${process.pid}`);
    return lock;
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY")
      throw new WriterBusyError(databasePath, readHolder(databasePath));
    throw asDatabasePathError(error, path);
  }
}

/**
 * True when the file open as `fd` is the one now at `path`. An unlinked file cannot come back, and
 * the open fd keeps its inode from being reused, so a match means the path named it throughout.
 */
export function isFileAt(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const now = statSync(path);
    return open.ino === now.ino && open.dev === now.dev;
  } catch {
    return false;
  }
}

/**
 * Removes the lock file while still holding its lock, then closes it: a database directory is
 * left as the daemon found it (no stray `.lock` after a failed start). A process that opened the
 * old file meanwhile finds it gone once it locks it, and starts over (isFileAt).
 */
function releaseOnce(lock: Database, fd: number, path: string): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    rmSync(path, { force: true });
    lock.close();
    closeSync(fd);
  };
}

/** Records the lock holder in `meta`, for the message a refused second writer prints. */
export function recordWriter(db: Database, holder: WriterHolder): void {
  db.prepare(
    "INSERT INTO meta (key, value) VALUES ('writer', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  ).run(JSON.stringify(holder));
}

/** The holder recorded in the database, read without creating or changing anything; undefined when unknown. */
function readHolder(databasePath: string): WriterHolder | undefined {
  try {
    const db = new DatabaseConstructor(databasePath, { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare("SELECT value FROM meta WHERE key = 'writer'").get() as
        { value: string } | undefined;
      return row === undefined ? undefined : (JSON.parse(row.value) as WriterHolder);
    } finally {
      db.close();
    }
  } catch {
    // No database yet, or no meta table: the other writer is still starting.
    return undefined;
  }
}
