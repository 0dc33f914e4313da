import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { createMetrics } from "../../src/ops/metrics.js";
import { MAINTENANCE_THREAD_FROM_LOGS } from "../../src/ops/threadSettings.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import { freshDbPath } from "../helpers/fixtures.js";
import { READER_INDEXES } from "../../src/store/readerIndexDefinitions.js";

const CHAIN_ID = 8453;
/** Enough transfers that each reader index over them takes a good part of a second to build. */
const ROWS = 200_000;
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A store on a fresh file (its directory removed after the tests: the filled one is a quarter of a gigabyte). */
function freshStore() {
  const path = freshDbPath("flashindex-maintenance-");
  dirs.push(dirname(path));
  const db = openDatabase(path, CHAIN_ID);
  return {
    db,
    store: createSqliteStore({
      db,
      chainId: CHAIN_ID,
      metrics: createMetrics({ defaultMetrics: false }),
    }),
  };
}

/** A store holding ROWS finalized transfers, written straight in SQL (the fill is not what is tested), its reader indexes dropped. */
async function filledStore() {
  const { db, store } = freshStore();
  await store.readerIndexes.drop();
  const hex = (expression: string, digits: number) =>
    `'0x' || printf('%0${digits}x', ${expression})`;
  db.transaction(() => {
    db.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
      INSERT INTO logs (id, chain_id, address, topic0, topic1, topic2, data, block_number, block_hash, block_timestamp, tx_hash,
        tx_index, log_index, tx_log_position, status, source, first_seen_at, confirmed_at, finalized_at)
      SELECT i, ${CHAIN_ID}, ${hex("1", 40)}, ${hex("2", 64)}, ${hex("i % 977", 64)}, ${hex("i % 1009", 64)}, ${hex("i", 64)},
        i / 20, ${hex("i / 20", 64)}, 1700000000 + i / 20, ${hex("(i * 2654435761) % 4294967291", 64)}, i % 20, i % 20, 0,
        'finalized', 'backfill', 0, 0, 0
      FROM n`);
    db.exec(`
      INSERT INTO transfers (log_id, chain_id, token, from_address, to_address, value, block_number, block_hash, block_timestamp,
        tx_hash, tx_index, log_index, status)
      SELECT id, chain_id, address, ${hex("(id * 7919) % 100003", 40)}, ${hex("(id * 104729) % 100019", 40)}, '1', block_number,
        block_hash, block_timestamp, tx_hash, tx_index, log_index, status
      FROM logs`);
  })();
  return { db, store };
}

/** Runs `work`, recording the longest stretch in which a 5 ms timer could not fire. */
async function longestStall<T>(
  work: () => Promise<T>,
): Promise<{ result: T; stallMs: number; tookMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  try {
    const result = await work();
    stallMs = Math.max(stallMs, performance.now() - last);
    return { result, stallMs, tookMs: performance.now() - started };
  } finally {
    clearInterval(timer);
  }
}

describe("a bulk load's end beside live writes, on the maintenance thread (SQLite)", () => {
  test("the reader indexes build while the event loop keeps turning; a write asked for meanwhile waits for the index under way, then lands", async () => {
    const { db, store } = await filledStore();
    expect(await store.readerIndexes.missing()).toEqual(READER_INDEXES.map((index) => index.name));

    let wrote: Promise<void> | undefined;
    const { result, stallMs, tookMs } = await longestStall(async () => {
      const building = store.readerIndexes.build({ mode: "daemon" });
      // Asked while the first index is under way: it must neither fail on SQLite's lock nor block this thread.
      wrote = new Promise((resolve) => setTimeout(resolve, 20)).then(() =>
        store.writeMeta("asked_during_build", "yes"),
      );
      return building;
    });
    await wrote;

    expect(result).toEqual(READER_INDEXES.map((index) => index.name));
    expect(await store.readerIndexes.missing()).toEqual([]);
    expect(await store.readMeta("asked_during_build")).toBe("yes");
    // Four of the six indexes cover ROWS rows each: built on this thread, the longest stall would be
    // at least a quarter of the whole build. On the maintenance thread, the timer keeps firing.
    expect(tookMs).toBeGreaterThan(200);
    expect(stallMs).toBeLessThan(tookMs / 8);
    expect(
      db
        .prepare(
          "SELECT COUNT(*) FROM transfers INDEXED BY transfers_by_from WHERE from_address >= '0x'",
        )
        .pluck()
        .get(),
    ).toBe(ROWS);
    await store.close();
  });

  test("past MAINTENANCE_THREAD_FROM_LOGS stored logs the build runs on the thread with no live writes too (flashindex backfill): the event loop keeps turning", async () => {
    const { db, store } = await filledStore();
    // The store's size is read from its highest log id: one more log, numbered at the threshold.
    db.prepare(
      `
      INSERT INTO logs (id, chain_id, address, topic0, topic1, topic2, data, block_number, block_hash, block_timestamp, tx_hash,
        tx_index, log_index, tx_log_position, status, source, first_seen_at, confirmed_at, finalized_at)
      SELECT ?, chain_id, address, topic0, topic1, topic2, data, block_number + 1000000, block_hash, block_timestamp, tx_hash,
        tx_index, log_index, tx_log_position, status, source, first_seen_at, confirmed_at, finalized_at
      FROM logs WHERE id = 1`,
    ).run(MAINTENANCE_THREAD_FROM_LOGS);
    expect(await store.storedLogCount()).toBe(MAINTENANCE_THREAD_FROM_LOGS);

    const { result, stallMs, tookMs } = await longestStall(() => store.readerIndexes.build());
    expect(result).toEqual(READER_INDEXES.map((index) => index.name));
    expect(tookMs).toBeGreaterThan(200);
    expect(stallMs).toBeLessThan(tookMs / 8);
    await store.close();
  });

  test("a shutdown during the build lets the index under way finish and leaves the rest missing for the next build", async () => {
    const { store } = freshStore();
    await store.readerIndexes.drop();
    const stop = new AbortController();
    const building = store.readerIndexes.build({ mode: "daemon", signal: stop.signal });
    stop.abort();
    const [first, ...rest] = READER_INDEXES.map((index) => index.name);
    expect(await building).toEqual([first]);
    expect(await store.readerIndexes.missing()).toEqual(rest);
    expect(await store.readerIndexes.build()).toEqual(rest);
    await store.close();
  });

  test("a job that fails rejects with the reason, and the store's writes go on after it", async () => {
    const { db, store } = freshStore();
    // The staging tables gone (as in a file another program damaged), the move cannot run.
    db.exec("DROP TABLE staged_user_operations");
    await expect(store.stagedAttribution.move({ mode: "daemon" })).rejects.toThrow(
      /staged_user_operations/,
    );
    await store.writeMeta("after_failure", "yes");
    expect(await store.readMeta("after_failure")).toBe("yes");
    await store.close();
  });
});
