import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import type { Hex } from "viem";
import { describe, expect, test } from "vitest";
import { createSqliteOrders } from "../../src/store/sqlite/orders.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createLogWriter } from "../../src/store/sqlite/logWriter.js";
import { migrate, SCHEMA_VERSION } from "../../src/store/sqlite/migrations/migrations.js";
import { SCHEMA_V1 } from "../../src/store/sqlite/migrations/schemaV1.js";
import { SCHEMA_V2 } from "../../src/store/sqlite/migrations/schemaV2.js";
import { SCHEMA_V3 } from "../../src/store/sqlite/migrations/schemaV3.js";
import { SCHEMA_V4 } from "../../src/store/sqlite/migrations/schemaV4.js";
import {
  listTestsAsEqualities,
  UNSETTLED_STATUS_SQL,
} from "../../src/store/sqlite/listTestsAsEqualities.js";
import { matchWebhookTriggersToSubscriptions } from "../../src/store/sqlite/webhookTriggers.js";
import { word } from "../helpers/fixtures.js";

const TOKEN: Hex = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Hex = "0x00000000000000000000000000000000000a11ce";

/** A database at schema version 4 as shipped, holding a capture (AuthorizationUsed + Transfer) and an order for it. */
function v4Database() {
  const db = new DatabaseConstructor(
    join(mkdtempSync(join(tmpdir(), "flashindex-migrate-")), "index.db"),
  );
  db.pragma("journal_mode = WAL");
  db.pragma("foreign_keys = ON");
  for (const sql of [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4]) db.exec(sql);
  db.pragma("user_version = 4");
  const nonce = word("n1");
  createSqliteOrders(db).add(
    {
      chainId: 8453,
      token: TOKEN,
      authorizer: ALICE,
      payee: ALICE,
      value: 5n,
      validAfter: 0,
      validBefore: 4_000_000_000,
      nonce,
      kind: "transfer",
      signature: `0x${"11".repeat(65)}`,
    },
    1,
  );
  const base = {
    address: TOKEN,
    blockNumber: 7,
    blockHash: word("b7"),
    blockTimestamp: 1_700_000_000,
    transactionHash: word("t1"),
    transactionIndex: 0,
    removed: false,
  };
  const { rows } = toLogRows(
    [
      { ...base, topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), nonce], data: "0x", logIndex: 0 },
      {
        ...base,
        topics: [TRANSFER_TOPIC, word(ALICE), word("5409")],
        data: word("5"),
        logIndex: 1,
      },
    ],
    { chainId: 8453, statusOf: () => "confirmed", source: "head", timestampOf: () => 0 },
  );
  db.transaction(() => createLogWriter(db).insertRows(rows, 2))();
  return db;
}

describe("migrate() to schema 5", () => {
  test("rebuilds logs with a key that leads with the block number, keeping every row, view and trigger", async () => {
    const db = v4Database();
    const before = {
      logs: db.prepare("SELECT * FROM logs ORDER BY id").all(),
      states: db.prepare("SELECT * FROM authorization_states").all(),
      orders: db.prepare("SELECT id, state, event_status FROM orders").all(),
      objects: db
        .prepare(
          "SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger', 'index') ORDER BY name",
        )
        .all(),
    };
    expect(before.orders).toEqual([{ id: 1, state: "captured", event_status: "confirmed" }]);

    expect(migrate(db)).toEqual({ from: 4, to: SCHEMA_VERSION });
    expect(db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.prepare("SELECT * FROM logs ORDER BY id").all()).toEqual(before.logs);
    expect(db.prepare("SELECT * FROM authorization_states").all()).toEqual(before.states);
    // Every view, trigger and index kept; later steps add their own (schema 6, narrowed by schema 8:
    // the writer's hash-tail index; schema 7: the webhook outbox; schema 13: bundles' operation logs;
    // schema 14: owed attribution; schema 15: the relayers' nonce book).
    const after = db
      .prepare(
        "SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger', 'index') ORDER BY name",
      )
      .all() as Array<{ name: string }>;
    const added = (name: string) =>
      /^(?:sqlite_autoindex_)?(?:webhook_|x402_|user_operation_logs_|attribution_owed_|relayer_nonces_)|^order_captures_/.test(
        name,
      ) ||
      [
        "logs_recently_removed",
        "logs_unsettled_by_tx_tail",
        "unmapped_bundle_transfers",
        "owed_attribution_transfers",
      ].includes(name);
    expect(after.filter((o) => !added(o.name))).toEqual(before.objects);
    expect(after).toContainEqual({ type: "index", name: "logs_unsettled_by_tx_tail" });
    expect(after).not.toContainEqual({ type: "index", name: "logs_by_tx_tail" });
    const unique = (
      db.prepare("PRAGMA index_list(logs)").all() as Array<{
        name: string;
        unique: number;
        origin: string;
      }>
    ).find((i) => i.origin === "u")!;
    expect(
      (db.prepare(`PRAGMA index_info("${unique.name}")`).all() as Array<{ name: string }>).map(
        (c) => c.name,
      ),
    ).toEqual(["block_number", "log_index", "tx_hash", "block_hash"]);
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(db.pragma("foreign_key_check")).toEqual([]);

    // The triggers still work: a reorg flags the log removed, its transfer follows, the order rolls back.
    db.prepare(
      "UPDATE logs SET status = 'removed', removed_at = 3 WHERE block_number = 7 AND block_hash = ?",
    ).run(word("b7"));
    expect(db.prepare("SELECT status FROM transfers").pluck().all()).toEqual(["removed"]);
    expect(db.prepare("SELECT state FROM orders").pluck().all()).toEqual(["authorized"]);
    // And the key still refuses the same log twice.
    expect(() =>
      db
        .prepare(
          "INSERT INTO logs SELECT NULL, chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, tx_log_position, status, source, first_seen_at, preconfirmed_at, confirmed_at, finalized_at, removed_at FROM logs LIMIT 1",
        )
        .run(),
    ).toThrow(/UNIQUE/);
    db.close();
  });

  test("schemas 8 and 9: the lookup of rows that can still change stays indexed while a bulk load has dropped logs_by_tx", () => {
    const db = v4Database();
    migrate(db);
    db.exec("DROP INDEX logs_by_tx");
    // The form lifecycle's by-content lookup uses: the tail of the hash, the hash itself, the unsettled statuses.
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT id FROM logs WHERE substr(tx_hash, 51, 16) = substr(?, 51, 16) AND tx_hash = ? AND ${UNSETTLED_STATUS_SQL}`,
      )
      .all(word("t1"), word("t1"));
    expect(plan.map((step) => (step as { detail: string }).detail).join("; ")).toMatch(
      /USING INDEX logs_unsettled_by_tx_tail/,
    );
    db.close();
  });

  test("is a no-op on a database already at the newest version", () => {
    const db = v4Database();
    migrate(db);
    const schema = db.prepare("SELECT sql FROM sqlite_master ORDER BY name").pluck().all();
    expect(migrate(db)).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
    expect(db.prepare("SELECT sql FROM sqlite_master ORDER BY name").pluck().all()).toEqual(schema);
    db.close();
  });
});

describe("migrate() to schema 9", () => {
  const longListTests = (db: DatabaseConstructor.Database) =>
    (
      db
        .prepare(
          "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'trigger', 'index') AND sql IS NOT NULL",
        )
        .all() as Array<{ type: string; name: string; sql: string }>
    )
      .filter((o) => /\bIN\s*\(\s*'[^']*'\s*,\s*'[^']*'\s*,/.test(o.sql))
      .map((o) => `${o.type} ${o.name}`);

  test("checks values with equalities, not lists SQLite turns into a table on every insert; rows and constraints unchanged", () => {
    const db = v4Database();
    expect(longListTests(db)).toContain("table logs");
    const before = db.prepare("SELECT * FROM logs ORDER BY id").all();
    migrate(db);
    expect(longListTests(db)).toEqual([]);
    expect(db.prepare("SELECT * FROM logs ORDER BY id").all()).toEqual(before);
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");

    // Every value the old lists allowed is still allowed, and nothing else is.
    const row = db.prepare("SELECT * FROM logs LIMIT 1").get() as Record<string, unknown>;
    const insert = (changes: Record<string, unknown>) => {
      const values = { ...row, ...changes, id: null, log_index: Math.floor(Math.random() * 1e9) };
      const columns = Object.keys(values);
      db.prepare(
        `INSERT INTO logs (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
      ).run(values);
    };
    for (const status of ["preconfirmed", "confirmed", "finalized", "removed", "dropped"])
      insert({ status });
    for (const source of ["backfill", "head", "pending", "pending_ws"]) insert({ source });
    expect(() => insert({ status: "pending" })).toThrow(/CHECK constraint failed/);
    expect(() => insert({ source: "rpc" })).toThrow(/CHECK constraint failed/);
    const code = db.prepare(
      "INSERT INTO attribution_codes (tx_hash, op_index, position, code, role, registry) VALUES (?, -1, ?, 'bc', ?, 'canonical')",
    );
    db.prepare(
      "INSERT INTO transactions (tx_hash, chain_id, from_address, input_bytes, attribution, fetched_at) VALUES (?, 8453, ?, 0, 'codes', 1)",
    ).run(word("t9"), ALICE);
    expect(() => code.run(word("t9"), 0, "wallet")).not.toThrow();
    expect(() => code.run(word("t9"), 1, "owner")).toThrow(/CHECK constraint failed/);

    // The rewritten trigger still announces a captured authorization to an active subscription
    // (created with it since schema 11, as the outbox's syncSubscriptions does).
    db.prepare(
      "INSERT INTO webhook_subscriptions (url, active, from_block, cursor_event_id, created_at) VALUES ('http://h', 1, 0, 0, 1)",
    ).run();
    matchWebhookTriggersToSubscriptions(db);
    expect(longListTests(db)).toEqual([]);
    const events = () =>
      db.prepare("SELECT type FROM webhook_events WHERE type LIKE 'authorization.%'").pluck().all();
    const authorization = db.prepare("SELECT * FROM authorization_events").get() as Record<
      string,
      unknown
    >;
    db.prepare("DELETE FROM authorization_events").run();
    const columns = Object.keys(authorization);
    db.prepare(
      `INSERT INTO authorization_events (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
    ).run({ ...authorization, status: "removed" });
    expect(events()).toEqual([]);
    db.prepare("DELETE FROM authorization_events").run();
    db.prepare(
      `INSERT INTO authorization_events (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
    ).run({ ...authorization, status: "confirmed" });
    expect(events()).toEqual(["authorization.captured"]);
    db.close();
  });

  test("a connection opened before the step reloads the schema and keeps enforcing it", () => {
    const db = v4Database();
    const other = new DatabaseConstructor(db.name);
    const version = other.pragma("schema_version", { simple: true }) as number;
    const setStatus = other.prepare("UPDATE logs SET status = ? WHERE id = 1");
    migrate(db);
    expect(other.pragma("schema_version", { simple: true })).toBeGreaterThan(version);
    expect(() => setStatus.run("finalized")).not.toThrow();
    expect(() => setStatus.run("pending")).toThrow(/CHECK constraint failed/);
    expect(other.prepare("SELECT status FROM logs WHERE id = 1").pluck().get()).toBe("finalized");
    other.close();
    db.close();
  });
});

describe("migrate() to schema 11", () => {
  const rowTriggers = (db: DatabaseConstructor.Database) =>
    db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name IN ('webhook_payment_inserted', 'webhook_payment_status_changed', 'webhook_authorization_inserted') ORDER BY name",
      )
      .pluck()
      .all();
  /** A database at schema 10 with the outbox's row triggers, as every one was, and `active` subscriptions. */
  const v10Database = (active: boolean) => {
    const db = v4Database();
    migrate(db, 10);
    db.prepare(
      "INSERT INTO webhook_subscriptions (url, active, from_block, cursor_event_id, created_at) VALUES ('http://h', 1, 0, 0, 1)",
    ).run();
    matchWebhookTriggersToSubscriptions(db);
    if (!active) db.prepare("UPDATE webhook_subscriptions SET active = 0").run();
    db.pragma("user_version = 10");
    return db;
  };

  test("keeps the outbox's row triggers while a subscription is active and drops them when none is", () => {
    const all = [
      "webhook_authorization_inserted",
      "webhook_payment_inserted",
      "webhook_payment_status_changed",
    ];
    const withSubscription = v10Database(true);
    expect(rowTriggers(withSubscription)).toEqual(all);
    expect(migrate(withSubscription)).toEqual({ from: 10, to: SCHEMA_VERSION });
    expect(rowTriggers(withSubscription)).toEqual(all);
    withSubscription.close();

    const without = v10Database(false);
    expect(rowTriggers(without)).toEqual(all);
    migrate(without);
    expect(rowTriggers(without)).toEqual([]);
    without.close();
  });
});

describe("migrate() to schema 12", () => {
  test("admits the capturing state and the order source on a database with orders, keeping every row", () => {
    const db = v4Database();
    migrate(db, 11);
    const second = createSqliteOrders(db).add(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: ALICE,
        payee: ALICE,
        value: 6n,
        validAfter: 0,
        validBefore: 4_000_000_000,
        nonce: word("b2"),
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      1,
    );
    const insertCapturing = db.prepare(
      "INSERT INTO orders (chain_id, token, authorizer, payee, value, valid_after, valid_before, nonce, kind, signature, state, created_at, updated_at) SELECT chain_id, token, authorizer, payee, value, valid_after, valid_before, ?, kind, signature, 'capturing', 1, 1 FROM orders WHERE id = ?",
    );
    expect(() => insertCapturing.run(word("c3"), second.id)).toThrow(/CHECK constraint failed/);
    const before = db
      .prepare("SELECT id, state, event_status, value FROM orders ORDER BY id")
      .all();

    expect(migrate(db)).toEqual({ from: 11, to: SCHEMA_VERSION });
    expect(
      db.prepare("SELECT id, state, event_status, value FROM orders ORDER BY id").all(),
    ).toEqual(before);
    expect(db.prepare("SELECT DISTINCT source FROM orders").pluck().all()).toEqual(["merchant"]);
    db.prepare("UPDATE orders SET state = 'capturing' WHERE id = ?").run(second.id);
    expect(() =>
      db.prepare("UPDATE orders SET state = 'voided_offchain' WHERE id = ?").run(second.id),
    ).toThrow(/illegal order transition/);
    insertCapturing.run(word("c3"), second.id);
    expect(() =>
      db.prepare("UPDATE orders SET state = 'sideways' WHERE nonce = ?").run(word("c3")),
    ).toThrow(/CHECK constraint failed|illegal order transition/);
    expect(() =>
      db.prepare("UPDATE orders SET source = 'fax' WHERE id = ?").run(second.id),
    ).toThrow(/CHECK constraint failed/);
    expect(db.pragma("foreign_key_check")).toEqual([]);
    db.close();
  });
});

describe("migrate() to schema 15", () => {
  test("admits canceling with its transitions, adds the nonce book, and counts a stored capture as sent", () => {
    const db = v4Database();
    migrate(db, 14);
    const order = createSqliteOrders(db).add(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: ALICE,
        payee: ALICE,
        value: 6n,
        validAfter: 0,
        validBefore: 4_000_000_000,
        nonce: word("c15"),
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      1,
    );
    db.prepare("UPDATE orders SET state = 'capturing' WHERE id = ?").run(order.id);
    db.prepare(
      `INSERT INTO order_captures (order_id, relayer, relayer_nonce, tx_hash, raw_tx, max_fee_per_gas, max_priority_fee_per_gas, created_at, updated_at)
       VALUES (?, ?, 3, ?, '0x02', '1', '1', 5, 5)`,
    ).run(order.id, ALICE, word("t15"));
    expect(() => db.prepare("UPDATE orders SET state = 'canceling' WHERE id = 1").run()).toThrow(
      /CHECK constraint failed|illegal order transition/,
    );

    expect(migrate(db)).toEqual({ from: 14, to: SCHEMA_VERSION });
    // Sent by the relay of its time, which sent right after storing: never taken for an unsent x402 settle.
    expect(db.prepare("SELECT send_started_at, owner FROM order_captures").get()).toEqual({
      send_started_at: 5,
      owner: null,
    });
    // The first order was captured on chain (v4Database); a fresh one goes authorized -> canceling -> authorized.
    const fresh = createSqliteOrders(db).add(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: ALICE,
        payee: ALICE,
        value: 7n,
        validAfter: 0,
        validBefore: 4_000_000_000,
        nonce: word("d15"),
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      1,
    );
    db.prepare("UPDATE orders SET state = 'canceling' WHERE id = ?").run(fresh.id);
    expect(() =>
      db.prepare("UPDATE orders SET state = 'capturing' WHERE id = ?").run(fresh.id),
    ).toThrow(/illegal order transition/);
    db.prepare("UPDATE orders SET state = 'authorized' WHERE id = ?").run(fresh.id);
    expect(() =>
      db.prepare("UPDATE orders SET state = 'canceling' WHERE id = ?").run(order.id),
    ).toThrow(/illegal order transition/);
    db.prepare(
      "INSERT INTO relayer_nonces (chain_id, relayer, nonce, holder, owner, state, created_at, updated_at) VALUES (8453, ?, 3, 'capture:2', 'h:1:a', 'signed', 5, 5)",
    ).run(ALICE);
    expect(() => db.prepare("UPDATE relayer_nonces SET state = 'lost'").run()).toThrow(
      /CHECK constraint failed/,
    );
    expect(db.pragma("foreign_key_check")).toEqual([]);
    db.close();
  });
});

describe("migrate() to schema 17", () => {
  test("adds each capture's gas used, effective gas price and their transaction, null for captures stored before", () => {
    const db = v4Database();
    migrate(db, 16);
    const order = createSqliteOrders(db).add(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: ALICE,
        payee: ALICE,
        value: 6n,
        validAfter: 0,
        validBefore: 4_000_000_000,
        nonce: word("c17"),
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      1,
    );
    db.prepare(
      `INSERT INTO order_captures (order_id, relayer, relayer_nonce, tx_hash, raw_tx, max_fee_per_gas, max_priority_fee_per_gas, created_at, updated_at)
       VALUES (?, ?, 3, ?, '0x02', '1', '1', 5, 5)`,
    ).run(order.id, ALICE, word("t17"));
    expect(migrate(db)).toEqual({ from: 16, to: SCHEMA_VERSION });
    expect(
      db
        .prepare(
          "SELECT gas_used, effective_gas_price, gas_tx_hash, max_fee_per_gas FROM order_captures",
        )
        .get(),
    ).toEqual({
      gas_used: null,
      effective_gas_price: null,
      gas_tx_hash: null,
      max_fee_per_gas: "1",
    });
    db.close();
  });
});

describe("listTestsAsEqualities", () => {
  test("rewrites lists of three or more literals, leaves shorter lists and other IN forms alone", () => {
    expect(listTestsAsEqualities("CHECK (s IN ('a', 'b', 'c'))")).toBe(
      "CHECK ((s = 'a' OR s = 'b' OR s = 'c'))",
    );
    expect(listTestsAsEqualities("WHEN NEW.status IN ('a',\n    'b','c') AND x")).toBe(
      "WHEN (NEW.status = 'a' OR NEW.status = 'b' OR NEW.status = 'c') AND x",
    );
    expect(listTestsAsEqualities("CHECK (kind IN ('used', 'canceled'))")).toBe(
      "CHECK (kind IN ('used', 'canceled'))",
    );
    expect(listTestsAsEqualities("CHECK (active IN (0, 1, 2))")).toBe(
      "CHECK (active IN (0, 1, 2))",
    );
    expect(listTestsAsEqualities("WHERE x IN (SELECT y FROM t)")).toBe(
      "WHERE x IN (SELECT y FROM t)",
    );
  });
});
