import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor, { type Database } from "better-sqlite3";
import { Attribution as OxAttribution } from "ox/erc8021";
import { concat, encodeFunctionData, getAddress, type Hex } from "viem";
import { entryPoint07Abi } from "viem/account-abstraction";
import { ENTRY_POINT_ADDRESSES } from "../../src/decode/erc4337.js";
import { describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { attributeTransaction } from "../../src/decode/attributeTransaction.js";
import { ERC8021_MARKER } from "../../src/decode/erc8021.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createAttributionWriter } from "../../src/store/sqlite/attributionWriter.js";
import { createLogWriter } from "../../src/store/sqlite/logWriter.js";
import { migrate, SCHEMA_VERSION } from "../../src/store/sqlite/migrations/migrations.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { SCHEMA_V1 } from "../../src/store/sqlite/migrations/schemaV1.js";
import { SCHEMA_V2 } from "../../src/store/sqlite/migrations/schemaV2.js";
import { SCHEMA_V3 } from "../../src/store/sqlite/migrations/schemaV3.js";
import { userOperation, word } from "../helpers/fixtures.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const BUYER = "0x00000000000000000000000000000000000b0e01";
const SHOP = "0x000000000000000000000000000000000000c0de";
const REGISTRY = "0x00000000000000000000000000000000000c0c0a";
const OTHER_REGISTRY = "0x00000000000000000000000000000000000c0c0b";
const txHash = (n: number) => word(`fe${n.toString(16)}`);

function tempPath(): string {
  return join(mkdtempSync(join(tmpdir(), "flashindex-attribution-")), "test.db");
}

/** One confirmed Transfer of `value` from BUYER to SHOP in transaction `n`. */
function transferLog(n: number, value: bigint): RpcLog {
  return {
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word(BUYER), word(SHOP)],
    data: word(value.toString(16)),
    blockNumber: 10 + n,
    blockHash: word(`b${n}`),
    blockTimestamp: 1_700_000_000,
    transactionHash: txHash(n),
    transactionIndex: 0,
    logIndex: 0,
    removed: false,
  };
}

function insertTransfers(db: Database, values: ReadonlyArray<readonly [number, bigint]>): void {
  const { rows } = toLogRows(
    values.map(([n, value]) => transferLog(n, value)),
    { chainId: 8453, statusOf: () => "confirmed", source: "backfill", timestampOf: () => 0 },
  );
  createLogWriter(db).insertRows(rows, 1);
}

/** Decodes and stores transaction `n` with calldata `input`, sent by `from`. */
function storeTransaction(
  db: Database,
  n: number,
  input: Hex,
  from: Hex = BUYER,
  to: Hex = TOKEN as Hex,
): void {
  const tx = { hash: txHash(n), from, to, input };
  createAttributionWriter(db).insert(
    [{ chainId: 8453, tx, attribution: attributeTransaction(tx) }],
    1,
  );
}

const TRANSFER_CALL: Hex = `0xa9059cbb${word(SHOP).slice(2)}${word("64").slice(2)}`;
const withSuffix = (suffix: Hex): Hex => concat([TRANSFER_CALL, suffix]);

describe("attribution writer on schema v4", () => {
  test("tells stored transactions from new ones across lookup batches, in the order asked", () => {
    const db = openDatabase(tempPath(), 8453);
    for (let n = 0; n < 150; n++) storeTransaction(db, n * 2, TRANSFER_CALL);
    // 250 hashes, the even ones stored: three lookup batches, the last one short.
    const asked = Array.from({ length: 250 }, (_, i) => txHash(i));
    const unstored = createAttributionWriter(db).unstored(asked);
    expect(unstored).toHaveLength(125);
    expect(unstored).toEqual(asked.filter((_, i) => i % 2 === 1));
    expect(createAttributionWriter(db).unstored([])).toEqual([]);
    db.close();
  });

  test("a code of a custom registry is never merged with the same text in the canonical registry", () => {
    const db = openDatabase(tempPath(), 8453);
    // 1: schema 0 "baseapp" (canonical); 2: schema 1 "baseapp" in REGISTRY on chain 8453;
    // 3: schema 2 app "baseapp" with r naming the same registry (joins 2); 4: schema 2 app "baseapp"
    // in another registry; 5: schema 2 with a malformed r: app "baseapp" flagged, service "baseapp" canonical (joins 1).
    storeTransaction(db, 1, withSuffix(OxAttribution.toDataSuffix({ codes: ["baseapp"] })));
    storeTransaction(
      db,
      2,
      withSuffix(
        OxAttribution.toDataSuffix({
          codes: ["baseapp"],
          codeRegistry: { address: REGISTRY, chainId: 8453 },
        }),
      ),
    );
    storeTransaction(
      db,
      3,
      withSuffix(
        OxAttribution.toDataSuffix({
          appCode: "baseapp",
          registries: { app: { address: REGISTRY, chainId: 8453 } },
        }),
      ),
    );
    storeTransaction(
      db,
      4,
      withSuffix(
        OxAttribution.toDataSuffix({
          appCode: "baseapp",
          registries: { app: { address: OTHER_REGISTRY, chainId: 1 } },
        }),
      ),
    );
    // {a: "baseapp", s: ["baseapp"], r: {a: 7}}
    const cbor = `a3616167${Buffer.from("baseapp").toString("hex")}61738167${Buffer.from("baseapp").toString("hex")}6172a1616107`;
    storeTransaction(
      db,
      5,
      `${TRANSFER_CALL}${cbor}${(cbor.length / 2).toString(16).padStart(4, "0")}02${ERC8021_MARKER.slice(2)}` as Hex,
    );
    insertTransfers(db, [
      [1, 1n],
      [2, 20n],
      [3, 300n],
      [4, 4_000n],
      [5, 50_000n],
    ]);

    expect(
      db
        .prepare("SELECT attribution, registry_error FROM transactions WHERE tx_hash = ?")
        .get(txHash(5)),
    ).toEqual({
      attribution: "codes",
      registry_error: '"r"."a": not a map',
    });
    expect(
      db
        .prepare(
          "SELECT code, registry, registry_chain_id, registry_address, payments, volume FROM builder_code_volume ORDER BY volume",
        )
        .all(),
    ).toEqual([
      {
        code: "baseapp",
        registry: "custom",
        registry_chain_id: "8453",
        registry_address: REGISTRY,
        payments: 2,
        volume: 320,
      },
      {
        code: "baseapp",
        registry: "custom",
        registry_chain_id: "1",
        registry_address: OTHER_REGISTRY,
        payments: 1,
        volume: 4_000,
      },
      {
        code: "baseapp",
        registry: "malformed",
        registry_chain_id: null,
        registry_address: null,
        payments: 1,
        volume: 50_000,
      },
      {
        code: "baseapp",
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
        payments: 2,
        volume: 50_001,
      },
    ]);
    expect(
      db
        .prepare(
          "SELECT registry, registry_chain_id, registry_address, role, transactions FROM wallet_codes WHERE wallet = ? ORDER BY registry, role, registry_chain_id",
        )
        .all(BUYER),
    ).toEqual([
      {
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
        role: "code",
        transactions: 1,
      },
      {
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
        role: "service",
        transactions: 1,
      },
      {
        registry: "custom",
        registry_chain_id: "1",
        registry_address: OTHER_REGISTRY,
        role: "app",
        transactions: 1,
      },
      {
        registry: "custom",
        registry_chain_id: "8453",
        registry_address: REGISTRY,
        role: "app",
        transactions: 1,
      },
      {
        registry: "custom",
        registry_chain_id: "8453",
        registry_address: REGISTRY,
        role: "code",
        transactions: 1,
      },
      {
        registry: "malformed",
        registry_chain_id: null,
        registry_address: null,
        role: "app",
        transactions: 1,
      },
    ]);
    db.close();
  });

  test("a schema 2 suffix whose s is malformed keeps its app code, takes no service code, and stores why", () => {
    const db = openDatabase(tempPath(), 8453);
    // {a: "baseapp", s: ["morpho", 1]}
    const cbor = `a2616167${Buffer.from("baseapp").toString("hex")}61738266${Buffer.from("morpho").toString("hex")}01`;
    storeTransaction(
      db,
      1,
      `${TRANSFER_CALL}${cbor}${(cbor.length / 2).toString(16).padStart(4, "0")}02${ERC8021_MARKER.slice(2)}` as Hex,
    );
    insertTransfers(db, [[1, 7n]]);
    expect(db.prepare("SELECT attribution, malformed_reason FROM transactions").get()).toEqual({
      attribution: "codes",
      malformed_reason: '"s"[1]: code is not a text string',
    });
    expect(db.prepare("SELECT code, role FROM attribution_codes").all()).toEqual([
      { code: "baseapp", role: "app" },
    ]);
    db.close();
  });

  test("a schema 2 suffix with no codes is stored as no attribution, with its schema id and no code rows", () => {
    const db = openDatabase(tempPath(), 8453);
    storeTransaction(
      db,
      1,
      withSuffix(OxAttribution.toDataSuffix({ appCode: undefined, metadata: { source: "x" } })),
    );
    insertTransfers(db, [[1, 7n]]);
    expect(db.prepare("SELECT attribution, schema_id FROM transactions").get()).toEqual({
      attribution: "none",
      schema_id: 2,
    });
    expect(db.prepare("SELECT COUNT(*) FROM attribution_codes").pluck().get()).toBe(0);
    expect(db.prepare("SELECT value FROM unattributed_transfers").pluck().all()).toEqual(["7"]);
    db.close();
  });

  test("a handleAggregatedOps bundle stores each operation with its index across groups, sender and aggregator", () => {
    const db = openDatabase(tempPath(), 8453);
    const op = (sender: Hex, suffix?: Hex) =>
      userOperation(sender, suffix === undefined ? TRANSFER_CALL : withSuffix(suffix));
    const senders = [
      "0x00000000000000000000000000000000000000a1",
      getAddress("0xd8da6bf26964af9d7eed9e03e53415d37aa96045"),
    ] as const;
    const aggregators = [
      getAddress("0xabcdef0123456789abcdef0123456789abcdef01"),
      "0x00000000000000000000000000000000000000ac",
    ] as const;
    const input = encodeFunctionData({
      abi: entryPoint07Abi,
      functionName: "handleAggregatedOps",
      args: [
        [
          {
            userOps: [op(senders[0], OxAttribution.toDataSuffix({ codes: ["first"] }))],
            aggregator: aggregators[0],
            signature: "0x",
          },
          {
            userOps: [
              op(senders[1]),
              op(senders[0], OxAttribution.toDataSuffix({ appCode: "third" })),
            ],
            aggregator: aggregators[1],
            signature: "0x",
          },
        ],
        BUYER,
      ],
    });
    storeTransaction(db, 1, input, BUYER, ENTRY_POINT_ADDRESSES["0.7"]);
    expect(db.prepare("SELECT user_operations FROM transactions").pluck().get()).toBe(3);
    expect(
      db
        .prepare(
          "SELECT op_index, sender, aggregator, attribution FROM user_operations ORDER BY op_index",
        )
        .all(),
    ).toEqual([
      {
        op_index: 0,
        sender: senders[0],
        aggregator: aggregators[0].toLowerCase(),
        attribution: "codes",
      },
      {
        op_index: 1,
        sender: senders[1].toLowerCase(),
        aggregator: aggregators[1],
        attribution: "none",
      },
      { op_index: 2, sender: senders[0], aggregator: aggregators[1], attribution: "codes" },
    ]);
    expect(
      db.prepare("SELECT op_index, code, registry FROM attribution_codes ORDER BY op_index").all(),
    ).toEqual([
      { op_index: 0, code: "first", registry: "canonical" },
      { op_index: 2, code: "third", registry: "canonical" },
    ]);
    db.close();
  });
});

describe("migration to schema v4", () => {
  /** A database exactly as schema v3 shipped it, with attribution rows written the v3 way. */
  function v3Database(path: string): Database {
    const db = new DatabaseConstructor(path);
    for (const sql of [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3]) db.exec(sql);
    db.pragma("user_version = 3");
    db.prepare("INSERT INTO meta (key, value) VALUES ('chain_id', '8453')").run();
    const tx =
      db.prepare(`INSERT INTO transactions (tx_hash, chain_id, from_address, to_address, selector, input_bytes,
      attribution, schema_id, registry_address, registry_chain_id, malformed_reason, user_operations, fetched_at)
      VALUES (?, 8453, ?, ?, '0xa9059cbb', 100, ?, ?, ?, ?, NULL, ?, 1)`);
    const code = db.prepare(
      "INSERT INTO attribution_codes (tx_hash, op_index, position, code, role) VALUES (?, ?, ?, ?, ?)",
    );
    const userOp = db.prepare(
      "INSERT INTO user_operations (tx_hash, op_index, sender, attribution, schema_id, malformed_reason) VALUES (?, ?, ?, 'codes', ?, NULL)",
    );
    tx.run(txHash(1), BUYER, TOKEN, "codes", 0, null, null, 0);
    code.run(txHash(1), -1, 0, "baseapp", "code");
    tx.run(txHash(2), BUYER, TOKEN, "codes", 1, REGISTRY, "8453", 0);
    code.run(txHash(2), -1, 0, "baseapp", "code");
    tx.run(txHash(3), BUYER, TOKEN, "codes", 2, null, null, 0);
    code.run(txHash(3), -1, 0, "baseapp", "app");
    code.run(txHash(3), -1, 1, "privy", "wallet");
    code.run(txHash(3), -1, 2, "baseapp", "service");
    tx.run(txHash(4), BUYER, TOKEN, "none", null, null, null, 2);
    userOp.run(txHash(4), 0, "0x00000000000000000000000000000000000000a1", 1);
    code.run(txHash(4), 0, 0, "baseapp", "code");
    userOp.run(txHash(4), 1, "0x00000000000000000000000000000000000000a1", 0);
    code.run(txHash(4), 1, 0, "baseapp", "code");
    db.prepare(
      "INSERT INTO agent_registrations (wallet_address, builder_code, registered_at, last_confirmed_at) VALUES (?, 'bc_12345678', 1, 1)",
    ).run(BUYER);
    insertTransfers(db, [
      [1, 1n],
      [2, 20n],
      [3, 300n],
      [4, 4_000n],
    ]);
    return db;
  }

  test("migrate() takes a v3 database with attribution rows to v4 and the views answer per registry", () => {
    const path = tempPath();
    const db = v3Database(path);
    expect(
      db.prepare("SELECT code, payments FROM builder_code_volume ORDER BY code").all(),
    ).toEqual([
      { code: "baseapp", payments: 4 },
      { code: "privy", payments: 1 },
    ]);
    expect(migrate(db)).toEqual({ from: 3, to: SCHEMA_VERSION });
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(4);

    expect(
      db
        .prepare(
          "SELECT tx_hash, op_index, role, registry, registry_chain_id, registry_address FROM attribution_codes ORDER BY tx_hash, op_index, position",
        )
        .all(),
    ).toEqual([
      {
        tx_hash: txHash(1),
        op_index: -1,
        role: "code",
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
      },
      {
        tx_hash: txHash(2),
        op_index: -1,
        role: "code",
        registry: "custom",
        registry_chain_id: "8453",
        registry_address: REGISTRY,
      },
      {
        tx_hash: txHash(3),
        op_index: -1,
        role: "app",
        registry: "unrecorded",
        registry_chain_id: null,
        registry_address: null,
      },
      {
        tx_hash: txHash(3),
        op_index: -1,
        role: "wallet",
        registry: "unrecorded",
        registry_chain_id: null,
        registry_address: null,
      },
      {
        tx_hash: txHash(3),
        op_index: -1,
        role: "service",
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
      },
      {
        tx_hash: txHash(4),
        op_index: 0,
        role: "code",
        registry: "unrecorded",
        registry_chain_id: null,
        registry_address: null,
      },
      {
        tx_hash: txHash(4),
        op_index: 1,
        role: "code",
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
      },
    ]);
    // Transaction 4 is a bundle stored before schema 13: which operation paid 4,000 was never read,
    // so it is credited to no code and listed, with the reason, as unmapped.
    expect(
      db
        .prepare(
          "SELECT code, registry, registry_chain_id, payments, volume FROM builder_code_volume ORDER BY code, registry",
        )
        .all(),
    ).toEqual([
      { code: "baseapp", registry: "canonical", registry_chain_id: null, payments: 2, volume: 301 },
      { code: "baseapp", registry: "custom", registry_chain_id: "8453", payments: 1, volume: 20 },
      {
        code: "baseapp",
        registry: "unrecorded",
        registry_chain_id: null,
        payments: 1,
        volume: 300,
      },
      { code: "privy", registry: "unrecorded", registry_chain_id: null, payments: 1, volume: 300 },
    ]);
    expect(
      db.prepare("SELECT tx_hash, value, reason FROM unmapped_bundle_transfers").all(),
    ).toEqual([
      {
        tx_hash: txHash(4),
        value: "4000",
        reason: "stored before schema 13: the bundle's receipt was not read",
      },
    ]);
    expect(
      db
        .prepare("SELECT code, registry FROM wallet_codes WHERE wallet = ? AND role = 'registered'")
        .all(BUYER),
    ).toEqual([{ code: "bc_12345678", registry: "canonical" }]);
    expect(
      db
        .prepare(
          "SELECT COUNT(*) FROM attributed_transfers WHERE registry = 'custom' AND registry_address = ?",
        )
        .pluck()
        .get(REGISTRY),
    ).toBe(1);
    expect(db.prepare("SELECT COUNT(*) FROM unattributed_transfers").pluck().get()).toBe(0);
    db.close();

    // The file reopens at v4 and takes new rows with their registry.
    const reopened = openDatabase(path, 8453);
    storeTransaction(
      reopened,
      9,
      withSuffix(
        OxAttribution.toDataSuffix({
          codes: ["baseapp"],
          codeRegistry: { address: OTHER_REGISTRY, chainId: 10 },
        }),
      ),
    );
    expect(
      reopened
        .prepare(
          "SELECT registry, registry_chain_id, registry_address FROM attribution_codes WHERE tx_hash = ?",
        )
        .get(txHash(9)),
    ).toEqual({
      registry: "custom",
      registry_chain_id: "10",
      registry_address: OTHER_REGISTRY,
    });
    reopened.close();
  });

  test("the registry columns refuse a custom registry without its address, and an address on a canonical code", () => {
    const db = openDatabase(tempPath(), 8453);
    storeTransaction(db, 1, withSuffix(OxAttribution.toDataSuffix({ codes: ["x"] })));
    const insert = db.prepare(
      "INSERT INTO attribution_codes (tx_hash, op_index, position, code, role, registry, registry_chain_id, registry_address) VALUES (?, -1, ?, 'y', 'code', ?, ?, ?)",
    );
    expect(() => insert.run(txHash(1), 5, "custom", "1", null)).toThrow(/CHECK/);
    expect(() => insert.run(txHash(1), 6, "canonical", null, REGISTRY)).toThrow(/CHECK/);
    expect(() => insert.run(txHash(1), 7, "elsewhere", null, null)).toThrow(/CHECK/);
    db.close();
  });
});
