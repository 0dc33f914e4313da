import { copyFileSync, renameSync, statSync } from "node:fs";
import DatabaseConstructor from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { createCheckpointer } from "../../src/store/sqlite/threads/checkpointer.js";
import { createMetrics } from "../../src/ops/metrics.js";
import {
  openDatabase,
  openDatabaseReadOnly,
  resetWalWhenLarge,
} from "../../src/store/sqlite/openDatabase.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import {
  createWalCheckpoints,
  WAL_CHECK_INTERVAL_MS,
} from "../../src/store/sqlite/walCheckpoints.js";
import { freshDbPath, waitFor } from "../helpers/fixtures.js";

const size = (path: string) => statSync(path).size;

/** A database whose WAL holds about `megabytes` of pages that no checkpoint has copied back yet. */
function databaseWithUncopiedWal(megabytes: number) {
  const path = freshDbPath("flashindex-checkpoint-");
  const db = openDatabase(path, 8453);
  db.pragma("wal_autocheckpoint = 0");
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.exec("CREATE TABLE filler (bytes BLOB)");
  const insert = db.prepare("INSERT INTO filler VALUES (randomblob(4096))");
  db.transaction(() => {
    for (let i = 0; i < megabytes * 256; i++) insert.run();
  })();
  return { path, db };
}

describe("checkpoints beside the window writer", () => {
  test("the checkpointer thread copies the WAL back into the database file while its owner holds on to the WAL", async () => {
    const { path, db } = databaseWithUncopiedWal(4);
    const before = size(path);
    const checkpointer = createCheckpointer(path);
    checkpointer.nudge();
    checkpointer.nudge();
    await waitFor(
      () => size(path) > before + 3 * 2 ** 20,
      20_000,
      "the database file to receive the WAL's pages",
    );
    await checkpointer.close();
    expect(db.prepare("SELECT COUNT(*) FROM filler").pluck().get()).toBe(4 * 256);
    db.close();
  });

  test("a WAL past the limit is copied back by its writer and starts over at the next write, cut back to journal_size_limit; one under it is left alone", () => {
    const { path, db } = databaseWithUncopiedWal(2);
    db.pragma(`journal_size_limit = ${2 ** 19}`);
    const before = size(path);
    resetWalWhenLarge(db, 4 * 2 ** 20);
    expect([size(path), size(`${path}-wal`)]).toEqual([before, expect.any(Number)]);
    expect(size(`${path}-wal`)).toBeGreaterThan(2 * 2 ** 20);
    resetWalWhenLarge(db, 2 ** 20);
    expect(size(path)).toBeGreaterThan(before + 2 * 2 ** 20 - 2 ** 16);
    db.prepare("INSERT INTO filler VALUES (randomblob(16))").run();
    expect(size(`${path}-wal`)).toBeLessThanOrEqual(2 ** 19);
    expect(db.prepare("SELECT COUNT(*) FROM filler").pluck().get()).toBe(2 * 256 + 1);
    db.close();
  });
});

describe("checkpoints beside the store's own writes", () => {
  /**
   * Rows of `meta` stored in the database file itself (not only in its WAL): a copy of the file
   * alone, opened on its own. A copy taken while a checkpoint writes the file can be torn: undefined.
   */
  function rowsInMainFile(path: string): number | undefined {
    const copy = freshDbPath("flashindex-main-file-");
    copyFileSync(path, copy);
    const db = new DatabaseConstructor(copy, { readonly: true });
    try {
      return db.prepare("SELECT COUNT(*) FROM meta").pluck().get() as number;
    } catch {
      return undefined;
    } finally {
      db.close();
    }
  }

  test("a commit never copies the WAL back itself; the checkpointer thread does, soon after", async () => {
    const path = freshDbPath("flashindex-live-checkpoint-");
    const db = openDatabase(path, 8453);
    db.pragma("wal_checkpoint(TRUNCATE)");
    const store = createSqliteStore({
      db,
      chainId: 8453,
      metrics: createMetrics({ defaultMetrics: false }),
    });
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    const before = rowsInMainFile(path)!;
    // More than SQLite's default automatic checkpoint (1,000 pages): without one of its own, this stays in the WAL.
    db.exec("CREATE TABLE filler (bytes BLOB)");
    const insert = db.prepare("INSERT INTO filler VALUES (randomblob(4096))");
    db.transaction(() => {
      for (let i = 0; i < 1_200; i++) insert.run();
    })();
    db.prepare("INSERT INTO meta (key, value) VALUES ('test', 'x')").run();
    expect(rowsInMainFile(path)).toBe(before);
    await waitFor(
      () => rowsInMainFile(path) === before + 1,
      5 * WAL_CHECK_INTERVAL_MS,
      "the checkpointer to copy the write into the database file",
    );
    await store.close();
  });

  test("should the checkpointer thread die, SQLite's automatic checkpoint is turned back on", async () => {
    const path = freshDbPath("flashindex-dead-checkpointer-");
    const db = openDatabase(path, 8453);
    const checkpoints = createWalCheckpoints(db);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    // The thread opens the file by name: moved away, it cannot, and exits with an error.
    renameSync(path, `${path}.moved`);
    checkpoints.nudge();
    await waitFor(
      () => db.pragma("wal_autocheckpoint", { simple: true }) === 1_000,
      10_000,
      "the automatic checkpoint to be back",
    );
    renameSync(`${path}.moved`, path);
    await checkpoints.close();
    db.close();
  });

  test("a read-only store starts no checkpointer and leaves the file alone", async () => {
    const path = freshDbPath("flashindex-readonly-checkpoint-");
    openDatabase(path, 8453).close();
    const db = openDatabaseReadOnly(path, 8453);
    const store = createSqliteStore({
      db,
      chainId: 8453,
      metrics: createMetrics({ defaultMetrics: false }),
    });
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(1_000);
    await store.close();
  });
});
