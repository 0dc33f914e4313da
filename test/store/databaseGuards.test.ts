import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { ConfigError } from "../../src/errors/base.js";
import {
  NEW_DATABASE_PAGE_SIZE,
  openDatabase,
  openDatabaseReadOnly,
  refuseForeignFile,
  storedGenesisHash,
} from "../../src/store/sqlite/openDatabase.js";
import { SCHEMA_VERSION } from "../../src/store/sqlite/migrations/migrations.js";
import {
  acquireWriterLock,
  isFileAt,
  recordWriter,
  writerLockPath,
} from "../../src/store/sqlite/writerLock.js";
import { WriterBusyError } from "../../src/errors/store.js";

const GENESIS_A = `0x${"a".repeat(64)}` as const;
const GENESIS_B = `0x${"b".repeat(64)}` as const;
const tempPath = (name: string) => join(mkdtempSync(join(tmpdir(), "flashindex-guards-")), name);

/** Another program's SQLite file: tables, rows, no schema version. */
function foreignDatabase(path: string): Buffer {
  const db = new DatabaseConstructor(path);
  db.exec(
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')",
  );
  db.close();
  return readFileSync(path);
}

describe("database guards", () => {
  test("openDatabase() records the genesis hash and refuses another genesis before changing anything", () => {
    const path = tempPath("genesis.db");
    const db = openDatabase(path, 8453, { genesisHash: GENESIS_A });
    expect(storedGenesisHash(db)).toBe(GENESIS_A);
    db.close();
    const before = readFileSync(path);
    expect(() => openDatabase(path, 8453, { genesisHash: GENESIS_B })).toThrow(
      `database.path: database ${path} belongs to chain 8453 with genesis ${GENESIS_A}, but the RPC serves genesis ${GENESIS_B}; use another database.path`,
    );
    expect(readFileSync(path).equals(before)).toBe(true);
    openDatabase(path, 8453, { genesisHash: GENESIS_A }).close();
  });

  test("openDatabase() pins the genesis of a database that predates the pin on its next start", () => {
    const path = tempPath("legacy.db");
    openDatabase(path, 8453).close();
    const db = openDatabase(path, 8453, { genesisHash: GENESIS_A });
    expect(storedGenesisHash(db)).toBe(GENESIS_A);
    db.close();
  });

  test("openDatabase() gives a new database 16 KiB pages and leaves an existing database's size alone", () => {
    const fresh = openDatabase(tempPath("fresh.db"), 8453);
    expect(fresh.pragma("page_size", { simple: true })).toBe(NEW_DATABASE_PAGE_SIZE);
    fresh.close();
    // A database an earlier version created, with SQLite's default 4 KiB pages.
    const path = tempPath("older.db");
    const older = new DatabaseConstructor(path);
    older.pragma("page_size = 4096");
    older.pragma("journal_mode = WAL");
    older.close();
    openDatabase(path, 8453).close();
    const reopened = openDatabase(path, 8453);
    expect(reopened.pragma("page_size", { simple: true })).toBe(4096);
    expect(reopened.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    reopened.close();
  });

  test("openDatabase() refuses a SQLite file of another program and leaves it unchanged", () => {
    const path = tempPath("foreign.db");
    const before = foreignDatabase(path);
    expect(() => refuseForeignFile(path)).toThrow(ConfigError);
    expect(() => openDatabase(path, 8453)).toThrow(/is a SQLite database but not a flashindex one/);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  test("openDatabase() refuses a file that is not SQLite at all, with exit code 2", () => {
    const path = tempPath("notes.txt");
    writeFileSync(path, "these are my notes, not a database\n".repeat(10));
    const error = (() => {
      try {
        openDatabase(path, 8453);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).shortMessage).toContain(`${path} is not a SQLite database`);
  });

  test("openDatabaseReadOnly() never creates a file and names the missing path", () => {
    const path = tempPath("typo.db");
    expect(() => openDatabaseReadOnly(path, 8453)).toThrow(`${path} does not exist`);
    expect(existsSync(path)).toBe(false);
  });

  test("openDatabaseReadOnly() reads a flashindex database and refuses writes through it", () => {
    const path = tempPath("ro.db");
    openDatabase(path, 8453).close();
    const db = openDatabaseReadOnly(path, 8453);
    expect(db.prepare("SELECT value FROM meta WHERE key = 'chain_id'").get()).toEqual({
      value: "8453",
    });
    expect(() => db.prepare("DELETE FROM meta").run()).toThrow(/readonly/);
    db.close();
    expect(() => openDatabaseReadOnly(path, 84532)).toThrow(/holds chain 8453/);
  });

  test("acquireWriterLock() lets one writer in, names it to the next, and is free again after release", () => {
    const path = tempPath("locked.db");
    const first = acquireWriterLock(path, "start");
    const db = openDatabase(path, 8453);
    recordWriter(db, first.holder);
    db.close();
    expect(() => acquireWriterLock(path, "backfill")).toThrow(WriterBusyError);
    expect(() => acquireWriterLock(path, "backfill")).toThrow(`(pid ${process.pid} on `);
    first.release();
    first.release();
    const second = acquireWriterLock(path, "backfill");
    expect(existsSync(writerLockPath(path))).toBe(true);
    second.release();
    expect(existsSync(writerLockPath(path)), "release leaves no lock file behind").toBe(false);
  });

  test("a lock file left by a killed daemon is taken over and removed on release", () => {
    const path = tempPath("left.db");
    const stale = new DatabaseConstructor(writerLockPath(path));
    stale.pragma("user_version = 1");
    stale.close();
    const lock = acquireWriterLock(path, "start");
    expect(() => acquireWriterLock(path, "backfill")).toThrow(WriterBusyError);
    lock.release();
    expect(existsSync(writerLockPath(path))).toBe(false);
  });

  test("isFileAt() tells a file still at its path from one removed or replaced after it was opened", () => {
    // The race release guards against: a process locks the file its holder has just removed; a
    // third could then create and lock a new file at the same path. The removed one is no lock.
    const path = tempPath("inode.lock");
    writeFileSync(path, "");
    const fd = openSync(path, "r");
    expect(isFileAt(fd, path)).toBe(true);
    rmSync(path);
    expect(isFileAt(fd, path)).toBe(false);
    writeFileSync(path, "");
    expect(isFileAt(fd, path)).toBe(false);
    closeSync(fd);
  });
});
