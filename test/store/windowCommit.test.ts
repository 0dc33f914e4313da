import type { Hex } from "viem";
import DatabaseConstructor from "better-sqlite3";
import { packRows } from "../../src/rows/packedRows.js";
import { describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import { WINDOW_WRITER_NICE_IN_DAEMON } from "../../src/ops/threadSettings.js";
import {
  COMMIT_EVERY_ROWS_WHILE_LIVE,
  createWindowCommit,
} from "../../src/store/sqlite/windowCommit.js";
import { attributeTransaction } from "../../src/decode/attributeTransaction.js";
import {
  createLiveWriteGate,
  createWindowGate,
  createWriteGateMemory,
  LIVE_WRITE_MAX_WAIT_MS,
  WINDOW_YIELD_EVERY_ROWS,
  type WindowGate,
} from "../../src/store/sqlite/writeGate.js";
import { freshDbPath, threadNices, waitFor, word } from "../helpers/fixtures.js";
import type { WindowWrite } from "../../src/store/types.js";
import { packAttribution } from "../../src/decode/packAttribution.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";

/** A window of `count` Transfer logs, 10 per block from block 1. */
function windowOf(count: number): WindowWrite {
  const logs: RpcLog[] = Array.from({ length: count }, (_, i) => ({
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word("a11ce"), word("b0b")],
    data: word((i + 1).toString(16)),
    blockNumber: 1 + Math.floor(i / 10),
    blockHash: word(`b${(1 + Math.floor(i / 10)).toString(16)}`),
    blockTimestamp: 1_700_000_000,
    transactionHash: word(`7${i.toString(16)}`),
    transactionIndex: i % 10,
    logIndex: i % 10,
    removed: false,
  }));
  const { rows } = toLogRows(logs, {
    chainId: 8453,
    statusOf: () => "finalized",
    source: "backfill",
    timestampOf: () => 0,
  });
  return {
    from: 1,
    to: Math.ceil(count / 10),
    tokens: [TOKEN],
    rows: packRows(rows),
    attribution: { batches: [] },
  };
}

/** What another connection sees: committed logs and synced ranges. */
function seenFrom(path: string) {
  const reader = new DatabaseConstructor(path, { readonly: true });
  try {
    return {
      logs: reader.prepare("SELECT COUNT(*) FROM logs").pluck().get() as number,
      transfers: reader.prepare("SELECT COUNT(*) FROM transfers").pluck().get() as number,
      ranges: reader
        .prepare('SELECT from_block AS "from", to_block AS "to" FROM synced_ranges')
        .all(),
    };
  } finally {
    reader.close();
  }
}

/** Whether another connection holds the write lock (a third connection cannot begin a write). */
function writeLockTaken(path: string): boolean {
  const probe = new DatabaseConstructor(path, { timeout: 0 });
  try {
    probe.exec("BEGIN IMMEDIATE");
    probe.exec("ROLLBACK");
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === "SQLITE_BUSY") return true;
    throw error;
  } finally {
    probe.close();
  }
}

/** A gate on which a live write is waiting once, after `afterRows` rows; `onStepAside` runs while the window stands aside. */
function gateWaitingOnce(afterRows: number, onStepAside: () => void): WindowGate {
  let checks = 0;
  let entered = 0;
  return {
    enter: () => {
      if (++entered === 2) onStepAside();
    },
    leave: () => undefined,
    liveWriteWaiting: () => ++checks * WINDOW_YIELD_EVERY_ROWS === afterRows,
    liveWrites: () => 0,
  };
}

describe("a backfill window's commit", () => {
  test("steps aside for a waiting live write: the rows so far commit without the range, the range commits with the last rows", () => {
    const path = freshDbPath("flashindex-window-");
    const db = openDatabase(path, 8453);
    const window = windowOf(1_000);
    let whileAside: ReturnType<typeof seenFrom> | undefined;
    const commit = createWindowCommit(
      db,
      8453,
      gateWaitingOnce(2 * WINDOW_YIELD_EVERY_ROWS, () => (whileAside = seenFrom(path))),
    );

    const counts = commit(window, 1);

    expect(whileAside).toEqual({
      logs: 2 * WINDOW_YIELD_EVERY_ROWS,
      transfers: 2 * WINDOW_YIELD_EVERY_ROWS,
      ranges: [],
    });
    expect(counts).toMatchObject({ inserted: 1_000, duplicates: 0 });
    expect(seenFrom(path)).toEqual({
      logs: 1_000,
      transfers: 1_000,
      ranges: [{ from: 1, to: 100 }],
    });
    db.close();
  });

  test("steps aside while it stages a bulk load's attribution too, before the window's logs", () => {
    const path = freshDbPath("flashindex-window-");
    const db = openDatabase(path, 8453);
    const transactions = Array.from({ length: 1_000 }, (_, i) => {
      const tx = {
        hash: word(`7${i.toString(16)}`),
        from: word("a11ce").slice(0, 42) as Hex,
        to: TOKEN as Hex,
        input: "0xa9059cbb" as Hex,
      };
      return { chainId: 8453, tx, attribution: attributeTransaction(tx) };
    });
    const window = {
      ...windowOf(1_000),
      attribution: packAttribution(transactions, 1),
      stageAttribution: true,
    };
    let staged: unknown;
    const commit = createWindowCommit(
      db,
      8453,
      gateWaitingOnce(WINDOW_YIELD_EVERY_ROWS, () => {
        const reader = new DatabaseConstructor(path, { readonly: true });
        staged = reader.prepare("SELECT COUNT(*) FROM staged_transactions").pluck().get();
        reader.close();
      }),
    );

    commit(window, 1);

    expect(staged).toBe(WINDOW_YIELD_EVERY_ROWS);
    expect(db.prepare("SELECT COUNT(*) FROM staged_transactions").pluck().get()).toBe(1_000);
    expect(seenFrom(path)).toEqual({
      logs: 1_000,
      transfers: 1_000,
      ranges: [{ from: 1, to: 100 }],
    });
    db.close();
  });

  test("a crash while standing aside leaves the range unsynced; committing the window again adds each missing log once", () => {
    const path = freshDbPath("flashindex-window-");
    const db = openDatabase(path, 8453);
    const window = windowOf(1_000);
    const crashing = createWindowCommit(
      db,
      8453,
      gateWaitingOnce(WINDOW_YIELD_EVERY_ROWS, () => {
        throw new Error("killed");
      }),
    );
    expect(() => crashing(window, 1)).toThrow("killed");
    expect(db.inTransaction).toBe(false);
    expect(seenFrom(path)).toEqual({
      logs: WINDOW_YIELD_EVERY_ROWS,
      transfers: WINDOW_YIELD_EVERY_ROWS,
      ranges: [],
    });

    const counts = createWindowCommit(db, 8453)(window, 2);

    expect(counts).toMatchObject({
      inserted: 1_000 - WINDOW_YIELD_EVERY_ROWS,
      duplicates: WINDOW_YIELD_EVERY_ROWS,
    });
    expect(seenFrom(path)).toEqual({
      logs: 1_000,
      transfers: 1_000,
      ranges: [{ from: 1, to: 100 }],
    });
    db.close();
  });

  test("while live writes are running it commits every COMMIT_EVERY_ROWS_WHILE_LIVE rows; with none, once per window", () => {
    const path = freshDbPath("flashindex-window-");
    const db = openDatabase(path, 8453);
    const rows = 2 * COMMIT_EVERY_ROWS_WHILE_LIVE + WINDOW_YIELD_EVERY_ROWS;
    const seen: number[] = [];
    let liveWrites = 0;
    const gate: WindowGate = {
      enter: () => void seen.push(seenFrom(path).logs),
      leave: () => undefined,
      liveWriteWaiting: () => false,
      liveWrites: () => liveWrites,
    };
    const commit = createWindowCommit(db, 8453, gate);

    commit(windowOf(rows), 1);
    expect(seen).toEqual([0]);

    // A live write went through the gate: the next window's rows are committed as they go.
    liveWrites++;
    seen.length = 0;
    const later = { ...windowOf(rows), from: 1_001, to: 1_000 + rows / 10 };
    db.exec("DELETE FROM transfers; DELETE FROM logs; DELETE FROM synced_ranges");
    commit(later, 2);
    expect(seen).toEqual([0, COMMIT_EVERY_ROWS_WHILE_LIVE, 2 * COMMIT_EVERY_ROWS_WHILE_LIVE]);
    expect(seenFrom(path)).toMatchObject({ logs: rows, transfers: rows });
    db.close();
  });

  test("on the writer thread, a live write of the main connection goes in before the whole window is committed", async () => {
    const path = freshDbPath("flashindex-window-");
    const db = openDatabase(path, 8453);
    const store = createSqliteStore({
      db,
      chainId: 8453,
      metrics: createMetrics({ defaultMetrics: false }),
    });
    const writer = store.openWindowWriter({ bulk: true });
    const rows = 40_000;
    const committed = writer.commit(windowOf(rows), 1);
    // Once the thread holds the write lock, a live write must wait for it to step aside, not to finish.
    await waitFor(() => writeLockTaken(path), 20_000, "the writer thread's transaction", 5);

    await store.writeMeta("live_write", "done");
    const atLiveWrite = seenFrom(path);

    await expect(committed).resolves.toMatchObject({ inserted: rows });
    await writer.close();
    expect(atLiveWrite.logs).toBeLessThan(rows);
    expect(atLiveWrite.ranges).toEqual([]);
    expect(seenFrom(path)).toEqual({
      logs: rows,
      transfers: rows,
      ranges: [{ from: 1, to: rows / 10 }],
    });
    expect(await store.readMeta("live_write")).toBe("done");
    await store.close();
  });
});

describe("the window writer's thread beside live writes", () => {
  test.runIf(process.platform === "linux")(
    "runs at a lower CPU priority beside live writes (the daemon), at the process's own otherwise; the rest of the process does not",
    async () => {
      for (const mode of ["batch", "daemon"] as const) {
        const db = openDatabase(freshDbPath("flashindex-window-"), 8453);
        const store = createSqliteStore({
          db,
          chainId: 8453,
          metrics: createMetrics({ defaultMetrics: false }),
        });
        const writer = store.openWindowWriter({ bulk: true, mode });
        try {
          await writer.commit(windowOf(10), 1);
          expect(threadNices().filter((nice) => nice !== 0)).toEqual(
            mode === "daemon" ? [WINDOW_WRITER_NICE_IN_DAEMON] : [],
          );
        } finally {
          await writer.close();
          await store.close();
        }
      }
    },
  );
});

describe("the live-write gate", () => {
  test("a window writer that died inside its transaction does not hold live writes back", () => {
    const memory = createWriteGateMemory();
    const live = createLiveWriteGate(memory);
    createWindowGate(memory).enter();

    live.windowWriterGone();
    const started = performance.now();
    expect(live.hold(() => "written")).toBe("written");
    // Without the release it would wait out LIVE_WRITE_MAX_WAIT_MS.
    expect(performance.now() - started).toBeLessThan(LIVE_WRITE_MAX_WAIT_MS / 2);
  });

  test("the window writer's side sees how many live writes went through, a write inside a write counted once", () => {
    const memory = createWriteGateMemory();
    const live = createLiveWriteGate(memory);
    const window = createWindowGate(memory);
    expect(window.liveWrites()).toBe(0);

    live.hold(() => live.hold(() => "nested"));
    live.hold(() => "second");

    expect(window.liveWrites()).toBe(2);
  });

  test("work held from another thread (holdWhile) starts once the window writer leaves, keeps it out until it settles, and leaves the event loop free", async () => {
    const memory = createWriteGateMemory();
    const live = createLiveWriteGate(memory);
    const window = createWindowGate(memory);
    window.enter();

    const steps: string[] = [];
    let finish = () => undefined as void;
    const held = live.holdWhile(async () => {
      steps.push("work started");
      await new Promise<void>((resolve) => (finish = resolve));
      return "done";
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    steps.push("timer fired");
    expect(window.liveWriteWaiting()).toBe(true);

    window.leave();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(steps).toEqual(["timer fired", "work started"]);
    // The window writer, trying to begin again, would wait (enter() blocks while the flag is up).
    expect(window.liveWriteWaiting()).toBe(true);

    finish();
    expect(await held).toBe("done");
    expect(window.liveWriteWaiting()).toBe(false);
  });
});
