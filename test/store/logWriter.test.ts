import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { toLogRows } from "../../src/decode/toLogRows.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
} from "../../src/rows/paymentEvents.js";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { createLogWriter } from "../../src/store/sqlite/logWriter.js";
import { migrate, SCHEMA_VERSION } from "../../src/store/sqlite/migrations/migrations.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { createSqliteSyncedRanges } from "../../src/store/sqlite/syncedRanges.js";
import { freshDbPath, word } from "../helpers/fixtures.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const tx = (n: number) => word(`ab${n.toString(16)}`);
const ALICE = "0x00000000000000000000000000000000000a11ce";
const BOB = "0x0000000000000000000000000000000000000b0b";

function log(fields: Partial<RpcLog> & Pick<RpcLog, "topics" | "logIndex">): RpcLog {
  return {
    address: TOKEN,
    data: "0x",
    blockNumber: 10,
    blockHash: word("b10"),
    blockTimestamp: 1_700_000_000,
    transactionHash: tx(1),
    transactionIndex: 0,
    removed: false,
    ...fields,
  };
}

const capture = [
  log({ topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), word("n1")], logIndex: 0 }),
  log({ topics: [TRANSFER_TOPIC, word(ALICE), word(BOB)], data: word("f4240"), logIndex: 1 }),
];
const cancel = [
  log({
    topics: [AUTHORIZATION_CANCELED_TOPIC, word(ALICE), word("n2")],
    logIndex: 2,
    transactionHash: tx(2),
    transactionIndex: 1,
  }),
];

function freshDb() {
  return openDatabase(freshDbPath("flashindex-store-"), 8453);
}

function rows(logs: RpcLog[]) {
  return toLogRows(logs, {
    chainId: 8453,
    statusOf: () => "finalized",
    source: "backfill",
    timestampOf: () => 0,
  }).rows;
}

describe("store", () => {
  test("openDatabase() uses WAL and records the schema version; migrate() is safe to re-run", () => {
    const db = freshDb();
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    expect(migrate(db)).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
    db.close();
  });

  test("openDatabase() refuses a database filled from another chain", () => {
    const path = join(mkdtempSync(join(tmpdir(), "flashindex-store-")), "test.db");
    openDatabase(path, 8453).close();
    expect(() => openDatabase(path, 84532)).toThrow(/holds chain 8453/);
  });

  test("insertRows() stores decoded transfers with exact decimal values and never stores a log twice", () => {
    const db = freshDb();
    const writer = createLogWriter(db);
    const first = writer.insertRows(rows([...capture, ...cancel]), 1);
    expect(first.inserted).toBe(3);
    const again = writer.insertRows(rows([...capture, ...cancel]), 2);
    expect(again).toMatchObject({ inserted: 0, duplicates: 3 });
    expect(db.prepare("SELECT COUNT(*) AS n FROM logs").get()).toEqual({ n: 3 });
    expect(
      db.prepare("SELECT from_address, to_address, value, status FROM transfers").all(),
    ).toEqual([{ from_address: ALICE, to_address: BOB, value: "1000000", status: "finalized" }]);
    db.close();
  });

  test("a uint256 value beyond 2^64 is kept exactly", () => {
    const db = freshDb();
    const max = (2n ** 256n - 1n).toString(16);
    createLogWriter(db).insertRows(
      rows([
        log({ topics: [TRANSFER_TOPIC, word(ALICE), word(BOB)], data: word(max), logIndex: 0 }),
      ]),
      1,
    );
    expect(db.prepare("SELECT value FROM transfers").get()).toEqual({
      value: (2n ** 256n - 1n).toString(),
    });
    db.close();
  });

  test("authorization_states tells captured (with its transfer) from canceled", () => {
    const db = freshDb();
    createLogWriter(db).insertRows(rows([...capture, ...cancel]), 1);
    const states = db
      .prepare(
        "SELECT nonce, state, status, captured_from, captured_to, captured_value FROM authorization_states ORDER BY nonce",
      )
      .all();
    expect(states).toEqual([
      {
        nonce: word("n1"),
        state: "captured",
        status: "finalized",
        captured_from: ALICE,
        captured_to: BOB,
        captured_value: "1000000",
      },
      {
        nonce: word("n2"),
        state: "canceled",
        status: "finalized",
        captured_from: null,
        captured_to: null,
        captured_value: null,
      },
    ]);
    db.close();
  });

  test("a status change on logs reaches the decoded tables, and live views hide removed rows", () => {
    const db = freshDb();
    createLogWriter(db).insertRows(rows(capture), 1);
    db.prepare("UPDATE logs SET status = 'removed', removed_at = 5").run();
    expect(db.prepare("SELECT status FROM transfers").get()).toEqual({ status: "removed" });
    expect(db.prepare("SELECT COUNT(*) AS n FROM live_transfers").get()).toEqual({ n: 0 });
    expect(db.prepare("SELECT COUNT(*) AS n FROM authorization_states").get()).toEqual({ n: 0 });
    db.close();
  });

  test("syncedRanges.add() merges neighbours into one range per run", () => {
    const db = freshDb();
    const ranges = createSqliteSyncedRanges(db, 8453);
    ranges.add(TOKEN, { from: 20, to: 29 });
    ranges.add(TOKEN, { from: 0, to: 9 });
    expect(ranges.list(TOKEN)).toEqual([
      { from: 0, to: 9 },
      { from: 20, to: 29 },
    ]);
    ranges.add(TOKEN, { from: 10, to: 19 });
    expect(ranges.list(TOKEN)).toEqual([{ from: 0, to: 29 }]);
    ranges.add(TOKEN, { from: 5, to: 12 });
    expect(ranges.list(TOKEN)).toEqual([{ from: 0, to: 29 }]);
    db.close();
  });

  test("another connection reads the file while a write transaction is open (WAL)", () => {
    const db = freshDb();
    const reader = new DatabaseConstructor(db.name, { readonly: true });
    db.prepare("BEGIN IMMEDIATE").run();
    createLogWriter(db).insertRows(rows(capture), 1);
    expect(reader.prepare("SELECT COUNT(*) AS n FROM logs").get()).toEqual({ n: 0 });
    db.prepare("COMMIT").run();
    expect(reader.prepare("SELECT COUNT(*) AS n FROM logs").get()).toEqual({ n: 2 });
    reader.close();
    db.close();
  });
});
