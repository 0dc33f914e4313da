import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, test } from "vitest";
import { connectionConfig } from "../../src/store/postgres/connection.js";
import {
  migratePostgres,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
} from "../../src/store/postgres/migrations/migrate.js";
import { migrate, SCHEMA_VERSION } from "../../src/store/sqlite/migrations/migrations.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";
import { word } from "../helpers/fixtures.js";

afterAll(() => stopFileBackends());

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ENTRY_POINT = "0x0000000071727de22e5e9d8baf0edac6f37da032";
const BUYER = "0x00000000000000000000000000000000000b0e01";
const SHOP = "0x000000000000000000000000000000000000c0de";
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/** Runs `sql` with `?` placeholders on either backend. */
type Run = (sql: string, params?: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;

/**
 * What a schema 12 database holds: a plain payment (tx a1, code "plain") and a bundle (tx b2: the
 * bundler's code "bundler", operation 0's "op_zero", operation 1's "op_one") that paid twice.
 */
async function fillV12(run: Run): Promise<void> {
  const tx = (hash: string, to: string, operations: number) =>
    run(
      `INSERT INTO transactions (tx_hash, chain_id, from_address, to_address, selector, input_bytes, attribution, user_operations, fetched_at)
       VALUES (?, 8453, ?, ?, '0x765e827f', 4, 'codes', ?, 1)`,
      [hash, BUYER, to, operations],
    );
  const code = (hash: string, op: number, text: string) =>
    run(
      "INSERT INTO attribution_codes (tx_hash, op_index, position, code, role) VALUES (?, ?, 0, ?, 'code')",
      [hash, op, text],
    );
  const transfer = async (hash: string, logIndex: number, value: string) => {
    await run(
      `INSERT INTO logs (chain_id, address, topic0, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, tx_log_position, status, source, first_seen_at)
       VALUES (8453, ?, ?, '0x', 7, ?, 70, ?, 0, ?, ?, 'confirmed', 'head', 1)`,
      [TOKEN, TRANSFER_TOPIC, word("b7"), hash, logIndex, logIndex],
    );
    await run(
      `INSERT INTO transfers (log_id, chain_id, token, from_address, to_address, value, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status)
       SELECT id, 8453, ?, ?, ?, ?, 7, ?, 70, ?, 0, ?, 'confirmed' FROM logs WHERE tx_hash = ? AND log_index = ?`,
      [TOKEN, BUYER, SHOP, value, word("b7"), hash, logIndex, hash, logIndex],
    );
  };
  await tx(word("a1"), TOKEN, 0);
  await code(word("a1"), -1, "plain");
  await transfer(word("a1"), 0, "10");
  await tx(word("b2"), ENTRY_POINT, 2);
  for (const op of [0, 1])
    await run(
      "INSERT INTO user_operations (tx_hash, op_index, sender, attribution) VALUES (?, ?, ?, 'codes')",
      [word("b2"), op, BUYER],
    );
  await code(word("b2"), -1, "bundler");
  await code(word("b2"), 0, "op_zero");
  await code(word("b2"), 1, "op_one");
  await transfer(word("b2"), 1, "20");
  await transfer(word("b2"), 2, "30");
}

/** After schema 13: the plain payment as before; the bundle's payments credited to no code, listed as unmapped. */
async function expectMigrated(run: Run): Promise<void> {
  expect(
    await run(
      "SELECT code, CAST(payments AS INTEGER) AS payments FROM builder_code_volume ORDER BY code",
    ),
  ).toEqual([{ code: "plain", payments: 1 }]);
  expect(
    await run(
      "SELECT tx_hash, operation_logs, operation_logs_error FROM transactions ORDER BY tx_hash",
    ),
  ).toEqual([
    { tx_hash: word("a1"), operation_logs: null, operation_logs_error: null },
    {
      tx_hash: word("b2"),
      operation_logs: "unmapped",
      operation_logs_error: "stored before schema 13: the bundle's receipt was not read",
    },
  ]);
  expect(
    await run("SELECT value, reason FROM unmapped_bundle_transfers ORDER BY log_index"),
  ).toEqual([
    { value: "20", reason: "stored before schema 13: the bundle's receipt was not read" },
    { value: "30", reason: "stored before schema 13: the bundle's receipt was not read" },
  ]);
  // Neither unattributed (their codes are known) nor mapped to any operation.
  expect(Number((await run("SELECT COUNT(*) AS n FROM unattributed_transfers"))[0]!.n)).toBe(0);
  expect(Number((await run("SELECT COUNT(*) AS n FROM user_operation_logs"))[0]!.n)).toBe(0);
}

describe("migration to schema 13", () => {
  test("SQLite: a bundle stored before is marked unmapped with the reason; other transactions are credited as before", async () => {
    const db = new DatabaseConstructor(join(mkdtempSync(join(tmpdir(), "fi-v13-")), "v12.db"));
    expect(migrate(db, 12)).toEqual({ from: 0, to: 12 });
    const run: Run = async (sql, params = []) => {
      const statement = db.prepare(sql);
      return statement.reader
        ? (statement.all(...params) as Array<Record<string, unknown>>)
        : (statement.run(...params), []);
    };
    await fillV12(run);
    // Before: every code of the bundle credited every payment of it.
    expect(await run("SELECT code, payments FROM builder_code_volume ORDER BY code")).toEqual([
      { code: "bundler", payments: 2 },
      { code: "op_one", payments: 2 },
      { code: "op_zero", payments: 2 },
      { code: "plain", payments: 1 },
    ]);
    expect(migrate(db)).toEqual({ from: 12, to: SCHEMA_VERSION });
    await expectMigrated(run);
    expect(db.pragma("foreign_key_check")).toEqual([]);
    db.close();
  });

  test("Postgres: the same", async () => {
    const { url, schema } = (await postgresBackend.freshDatabase()) as {
      url: string;
      schema: string;
    };
    const client = new pg.Client(connectionConfig(url, schema));
    await client.connect();
    try {
      // Schema 12 as a release of it left it.
      await client.query(`CREATE SCHEMA ${pg.escapeIdentifier(schema)}`);
      await client.query(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      for (const step of POSTGRES_MIGRATIONS.filter((m) => m.version <= 12)) {
        await client.query(step.sql);
        await client.query("INSERT INTO schema_migrations (version) VALUES ($1)", [step.version]);
      }
      const run: Run = async (sql, params = []) => {
        let n = 0;
        return (
          await client.query(
            sql.replace(/\?/g, () => `$${++n}`),
            [...params],
          )
        ).rows as Array<Record<string, unknown>>;
      };
      await fillV12(run);
      expect(
        await run(
          "SELECT code, CAST(payments AS INTEGER) AS payments FROM builder_code_volume ORDER BY code",
        ),
      ).toEqual([
        { code: "bundler", payments: 2 },
        { code: "op_one", payments: 2 },
        { code: "op_zero", payments: 2 },
        { code: "plain", payments: 1 },
      ]);
      expect(await migratePostgres(client, schema)).toEqual({
        from: 12,
        to: POSTGRES_SCHEMA_VERSION,
      });
      await expectMigrated(run);
    } finally {
      await client.end();
    }
  });
});
