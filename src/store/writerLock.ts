import { hostname } from "node:os";
import DatabaseConstructor, { type Database } from "better-sqlite3";
import { ConfigError } from "../errors/base.js";
import { asDatabasePathError, ensureDatabaseDirectory } from "./databasePathErrors.js";

/** Who writes a database: recorded in its `meta` table so a refused second writer can name it. */
export type WriterHolder = { pid: number; host: string; command: string; startedAt: string };

export type WriterLock = {
  readonly holder: WriterHolder;
  /** Gives the lock back; idempotent. The OS releases it anyway when the process dies. */
  release: () => void;
};

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
  const holder: WriterHolder = { pid: process.pid, host: hostname(), command, startedAt: new Date().toISOString() };
  if (databasePath === ":memory:") return { holder, release: () => undefined };
  ensureDatabaseDirectory(databasePath);
  let lock: Database;
  try {
    lock = new DatabaseConstructor(writerLockPath(databasePath));
  } catch (error) {
    throw asDatabasePathError(error, writerLockPath(databasePath));
  }
  try {
    lock.pragma("busy_timeout = 0");
    lock.pragma("locking_mode = EXCLUSIVE");
    // In memory: no -journal file next to the lock; nothing in it needs to survive a crash.
    lock.pragma("journal_mode = MEMORY");
    // Exclusive locking mode takes the write lock at the first write and keeps it until close.
    lock.pragma(`user_version = ${process.pid}`);
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY") throw new WriterBusyError(databasePath, readHolder(databasePath));
    throw asDatabasePathError(error, writerLockPath(databasePath));
  }
  let released = false;
  return {
    holder,
    release: () => {
      if (released) return;
      released = true;
      lock.close();
    },
  };
}

/** Records the lock holder in `meta`, for the message a refused second writer prints. */
export function recordWriter(db: Database, holder: WriterHolder): void {
  db.prepare("INSERT INTO meta (key, value) VALUES ('writer', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(JSON.stringify(holder));
}

export class WriterBusyError extends ConfigError {
  override name = "WriterBusyError";
  /** `where` names the database (a file path, or a redacted postgres URL with its schema); `field` the setting to change. */
  constructor(databasePath: string, holder: WriterHolder | undefined, field = "database.path") {
    const who =
      holder === undefined
        ? "(it has not recorded itself yet: it is still starting)"
        : `(pid ${holder.pid} on ${holder.host}, '${holder.command}', since ${holder.startedAt})`;
    super(field, `${databasePath} is being written by another flashindex process ${who}; stop it or use another ${field}`);
  }
}

/** The holder recorded in the database, read without creating or changing anything; undefined when unknown. */
function readHolder(databasePath: string): WriterHolder | undefined {
  try {
    const db = new DatabaseConstructor(databasePath, { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare("SELECT value FROM meta WHERE key = 'writer'").get() as { value: string } | undefined;
      return row === undefined ? undefined : (JSON.parse(row.value) as WriterHolder);
    } finally {
      db.close();
    }
  } catch {
    // No database yet, or no meta table: the other writer is still starting.
    return undefined;
  }
}
