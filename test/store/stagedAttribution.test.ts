import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "better-sqlite3";
import { Attribution as OxAttribution } from "ox/erc8021";
import { concat, encodeFunctionData, type Hex } from "viem";
import { entryPoint07Abi } from "viem/account-abstraction";
import { afterAll, describe, expect, test } from "vitest";
import type { Config } from "../../src/config/types.js";
import { packRows } from "../../src/rows/packedRows.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";
import { userOperation, word } from "../helpers/fixtures.js";
import { attributeTransaction } from "../../src/decode/attributeTransaction.js";
import { ENTRY_POINT_ADDRESSES } from "../../src/decode/erc4337.js";
import { createAttributionWriter } from "../../src/store/sqlite/attributionWriter.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { createStagedAttribution } from "../../src/store/sqlite/stagedAttribution.js";
import type { AttributedTransaction } from "../../src/decode/attributeTransaction.js";
import { packAttribution } from "../../src/decode/packAttribution.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const SHOP = "0x000000000000000000000000000000000000c0de";
const BUYER = "0x00000000000000000000000000000000000b0e01";
const TRANSFER_CALL: Hex = `0xa9059cbb${word(SHOP).slice(2)}${word("64").slice(2)}`;
const withSuffix = (suffix: Hex): Hex => concat([TRANSFER_CALL, suffix]);

/** Transaction `hash` sending `input`, decoded as the attributor decodes it. */
function attributed(hash: Hex, input: Hex, to: Hex = TOKEN as Hex): AttributedTransaction {
  const tx = { hash, from: BUYER as Hex, to, input };
  return { chainId: 8453, tx, attribution: attributeTransaction(tx) };
}

/** A handleOps bundle of two user operations, the second with a schema 2 suffix, its receipt's logs mapped one to each operation. */
function bundle(hash: Hex): AttributedTransaction {
  const op = (suffix?: Hex) =>
    userOperation(
      "0x00000000000000000000000000000000000000a1",
      suffix === undefined ? TRANSFER_CALL : withSuffix(suffix),
    );
  const input = encodeFunctionData({
    abi: entryPoint07Abi,
    functionName: "handleOps",
    args: [
      [op(), op(OxAttribution.toDataSuffix({ appCode: "morpho", walletCode: "bc_k2x9q7m1" }))],
      BUYER,
    ],
  });
  const bundleLogs = {
    kind: "mapped" as const,
    logs: [0, 1].map((op) => ({ token: TOKEN as Hex, txLogPosition: op, opIndex: op })),
  };
  return { ...attributed(hash, input, ENTRY_POINT_ADDRESSES["0.7"]), bundleLogs };
}

// Hashes out of order, as real ones are: the move sorts them.
const FIRST_WINDOW = [
  attributed(
    word("f3"),
    withSuffix(OxAttribution.toDataSuffix({ codes: ["bc_b8nos5a8", "baseapp"] })),
  ),
  attributed(word("a1"), TRANSFER_CALL),
  bundle(word("c7")),
];
const SECOND_WINDOW = [
  attributed(
    word("b2"),
    `${TRANSFER_CALL}dddddddd62617365617070200080218021802180218021802180218021` as Hex,
  ),
  attributed(
    word("e5"),
    withSuffix(
      OxAttribution.toDataSuffix({
        codes: ["bc_demo0001"],
        codeRegistry: { address: "0x00000000000000000000000000000000000c0c0a", chainId: 8453 },
      }),
    ),
  ),
];
/** Stored before the backfill (the live path attributed it): the staged copy of it below must not change it. */
const ALREADY_STORED = attributed(
  word("d4"),
  withSuffix(OxAttribution.toDataSuffix({ codes: ["first"] })),
);
const ALREADY_STORED_AGAIN = attributed(
  word("d4"),
  withSuffix(OxAttribution.toDataSuffix({ codes: ["other", "codes"] })),
);

function database(): Database {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), "flashindex-staged-")), "test.db"), 8453);
  createAttributionWriter(db).insert([ALREADY_STORED], 1);
  return db;
}

/** Every column of the attribution tables, in key order. */
const contents = (db: Database) => ({
  operationLogs: db
    .prepare("SELECT * FROM user_operation_logs ORDER BY tx_hash, token, tx_log_position")
    .all(),
  transactions: db.prepare("SELECT * FROM transactions ORDER BY tx_hash").all(),
  userOperations: db.prepare("SELECT * FROM user_operations ORDER BY tx_hash, op_index").all(),
  codes: db.prepare("SELECT * FROM attribution_codes ORDER BY tx_hash, op_index, position").all(),
});
const stagedCount = (db: Database) =>
  [
    "staged_transactions",
    "staged_user_operations",
    "staged_attribution_codes",
    "staged_bundles",
    "staged_user_operation_logs",
  ].map((table) => db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get());

describe("a bulk backfill's staged attribution", () => {
  test("once moved, the attribution tables hold exactly what window-by-window inserts store", () => {
    const windows = [FIRST_WINDOW, [...SECOND_WINDOW, ALREADY_STORED_AGAIN]].map((window, i) =>
      packAttribution(window, 100 + i),
    );

    const direct = database();
    const writer = createAttributionWriter(direct);
    for (const packed of windows) writer.insertPacked(packed);

    const staging = database();
    const stagingWriter = createAttributionWriter(staging);
    const staged = createStagedAttribution(staging);
    expect(staged.pending()).toBe(false);
    // The first window twice: a window fetched again after a crash stages its transactions again.
    for (const packed of [windows[0]!, ...windows])
      expect(stagingWriter.stagePacked(packed)).toBeGreaterThan(0);
    expect(staged.pending()).toBe(true);
    expect(stagingWriter.unstored([word("f3"), ALREADY_STORED.tx.hash])).toEqual([word("f3")]);
    expect(contents(staging).transactions).toHaveLength(1);

    expect(staged.move()).toBe(FIRST_WINDOW.length + SECOND_WINDOW.length);
    const expected = contents(direct);
    expect(expected.userOperations).toHaveLength(2);
    // The bundle's mapping, staged twice, is stored once, as window-by-window inserts store it.
    expect(expected.operationLogs).toEqual(
      [0, 1].map((op) => ({
        tx_hash: word("c7"),
        token: TOKEN,
        tx_log_position: op,
        op_index: op,
      })),
    );
    expect(
      expected.transactions.find((row) => (row as { tx_hash: Hex }).tx_hash === word("c7")),
    ).toMatchObject({ operation_logs: "mapped" });
    expect(expected.codes.length).toBeGreaterThan(5);
    expect(contents(staging)).toEqual(expected);
    expect(staged.pending()).toBe(false);
    expect(stagedCount(staging)).toEqual([0, 0, 0, 0, 0]);
    expect(staging.pragma("foreign_key_check")).toEqual([]);
    // Nothing left to move: a second move changes nothing.
    expect(staged.move()).toBe(0);
    expect(contents(staging)).toEqual(expected);
    direct.close();
    staging.close();
  });

  test("a bundle the live path mapped meanwhile keeps its mapping: its staged one is dropped", () => {
    const db = database();
    const writer = createAttributionWriter(db);
    writer.stagePacked(packAttribution(FIRST_WINDOW, 100));
    const live = bundle(word("c7"));
    writer.insertPacked(
      packAttribution(
        [
          {
            ...live,
            bundleLogs: {
              kind: "mapped",
              logs: [{ token: TOKEN as Hex, txLogPosition: 5, opIndex: 1 }],
            },
          },
        ],
        99,
      ),
    );
    createStagedAttribution(db).move();
    expect(contents(db).operationLogs).toEqual([
      { tx_hash: word("c7"), token: TOKEN, tx_log_position: 5, op_index: 1 },
    ]);
    expect(
      db
        .prepare("SELECT operation_logs, fetched_at FROM transactions WHERE tx_hash = ?")
        .get(word("c7")),
    ).toEqual({ operation_logs: "mapped", fetched_at: 99 });
    expect(stagedCount(db)).toEqual([0, 0, 0, 0, 0]);
    db.close();
  });

  test("a bundle staged twice with different mappings is stored as first staged, with only that staging's logs", () => {
    const db = database();
    const writer = createAttributionWriter(db);
    const later = {
      ...bundle(word("c7")),
      bundleLogs: {
        kind: "mapped" as const,
        logs: [{ token: TOKEN as Hex, txLogPosition: 7, opIndex: 0 }],
      },
    };
    writer.stagePacked(packAttribution(FIRST_WINDOW, 100));
    writer.stagePacked(packAttribution([later], 101));
    createStagedAttribution(db).move();
    expect(contents(db).operationLogs).toEqual(
      [0, 1].map((op) => ({
        tx_hash: word("c7"),
        token: TOKEN,
        tx_log_position: op,
        op_index: op,
      })),
    );
    db.close();
  });

  test("a failed move leaves everything staged and the tables untouched", () => {
    const db = database();
    createAttributionWriter(db).stagePacked(packAttribution(FIRST_WINDOW, 100));
    const before = contents(db);
    // A code row whose role no CHECK allows: the move's insert fails halfway, and rolls back.
    db.prepare("UPDATE staged_attribution_codes SET role = 'bogus' WHERE position = 1").run();
    expect(() => createStagedAttribution(db).move()).toThrow(/CHECK constraint failed/);
    expect(contents(db)).toEqual(before);
    expect(stagedCount(db)).toEqual([3, 2, 4, 1, 2]);
    db.close();
  });
});

describe.each(BACKENDS)("staged attribution through the store on $name", (backend) => {
  afterAll(() => stopFileBackends());

  test("windows stage it (SQLite), the move stores what window-by-window inserts store, and a reader sees none of it before", async () => {
    const contentsOf = async (stageAttribution: boolean) => {
      const config = testConfig({
        rpc: { http: ["http://127.0.0.1:9"] },
        database: await backend.freshDatabase(),
      });
      const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
      const reader = await backend.reader(config.database as Config["database"]);
      try {
        await store.insertAttribution([ALREADY_STORED], 1);
        const writer = store.openWindowWriter({ bulk: false });
        const windows = [FIRST_WINDOW, [...SECOND_WINDOW, ALREADY_STORED_AGAIN], FIRST_WINDOW];
        for (const [i, transactions] of windows.entries())
          await writer.commit(
            {
              from: i + 1,
              to: i + 1,
              tokens: [TOKEN],
              rows: packRows([]),
              attribution: packAttribution(transactions, 100 + i),
              stageAttribution,
            },
            1,
          );
        await writer.close();
        const before = await reader.all("SELECT tx_hash FROM transactions");
        // Postgres stores a window's attribution with it, staged or not (measured: staging did not pay there).
        const stages = stageAttribution && backend.name === "sqlite";
        expect(await store.stagedAttribution.pending()).toBe(stages);
        expect(await store.stagedAttribution.move()).toBe(
          stages ? FIRST_WINDOW.length + SECOND_WINDOW.length : 0,
        );
        expect(await store.stagedAttribution.pending()).toBe(false);
        return {
          before,
          after: {
            transactions: await reader.all("SELECT * FROM transactions ORDER BY tx_hash"),
            userOperations: await reader.all(
              "SELECT * FROM user_operations ORDER BY tx_hash, op_index",
            ),
            codes: await reader.all(
              "SELECT * FROM attribution_codes ORDER BY tx_hash, op_index, position",
            ),
            operationLogs: await reader.all(
              "SELECT * FROM user_operation_logs ORDER BY tx_hash, token, tx_log_position",
            ),
          },
        };
      } finally {
        await store.close();
        await reader.close();
      }
    };
    const direct = await contentsOf(false);
    const staged = await contentsOf(true);
    if (backend.name === "sqlite")
      expect(staged.before).toEqual([{ tx_hash: ALREADY_STORED.tx.hash }]);
    expect(direct.after.codes.length).toBeGreaterThan(5);
    expect(direct.after.operationLogs).toHaveLength(2);
    expect(staged.after).toEqual(direct.after);
  });
});
