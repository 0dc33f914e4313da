import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import pg from "pg";
import type { Config } from "../../src/config/types.js";
import { connectionConfig } from "../../src/store/postgres/connection.js";
import { inject } from "vitest";
import { startTestPostgres, type TestPostgres } from "./postgres.js";
import { sharedPostgresUrl } from "./postgresBroker.js";

/** Reads a store's tables with plain SQL that both backends accept (no parameters). */
export type TableReader = {
  /** `?` placeholders, bound to `params` in order. */
  all: <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;
  /** Which of these indexes exist, sorted by name. */
  indexNames: (names: readonly string[]) => Promise<string[]>;
  close: () => Promise<void>;
};

/** A backend the parameterised suites run against: how to point a config at a fresh database, and how to read it. */
export type TestBackend = {
  name: "sqlite" | "postgres";
  /** The `database` section of a config for a fresh, empty database. */
  freshDatabase: () => Promise<Record<string, unknown>>;
  /** A connection of its own; `writable` lets a test write behind the store's back (races, refusals). */
  reader: (database: Config["database"], options?: { writable?: boolean }) => Promise<TableReader>;
};

let postgres: Promise<TestPostgres> | undefined;
let postgresUrl: Promise<string> | undefined;
let nextSchema = 0;

/**
 * A database of this test file's own on the run's PostgreSQL (postgresBroker.ts: started once, and when
 * it cannot start every Postgres suite fails at once with the reason). Run without the broker (another
 * vitest config), the file starts a PostgreSQL of its own on first use; stopFileBackends() stops it.
 */
function postgresDatabase(): Promise<string> {
  const broker = inject("postgresBroker");
  if (broker === undefined) {
    postgres ??= startTestPostgres();
    postgresUrl ??= postgres.then((server) => server.createDatabase());
  } else postgresUrl ??= sharedPostgresUrl(broker).then(createFileDatabase);
  return postgresUrl;
}

/** CREATE DATABASE on the server of `serverUrl` (its `postgres` database), named for this process and file. */
async function createFileDatabase(serverUrl: string): Promise<string> {
  const name = `t${process.pid}_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return serverUrl.replace(/\/postgres$/, `/${name}`);
}

export const sqliteBackend: TestBackend = {
  name: "sqlite",
  freshDatabase: async () => ({
    path: join(mkdtempSync(join(tmpdir(), "flashindex-store-")), "index.db"),
  }),
  reader: async (database, options = {}) => {
    const db = new DatabaseConstructor(database.path, {
      readonly: options.writable !== true,
      fileMustExist: true,
    });
    if (options.writable === true) db.pragma("busy_timeout = 0");
    return {
      all: async <T>(sql: string, params: readonly unknown[] = []) => {
        const statement = db.prepare(sql);
        return (
          statement.reader ? statement.all(...params) : (statement.run(...params), [])
        ) as T[];
      },
      indexNames: async (names) =>
        db
          .prepare(
            `SELECT name FROM sqlite_master WHERE type = 'index' AND name IN (${names.map(() => "?").join(", ")}) ORDER BY name`,
          )
          .pluck()
          .all(...names) as string[],
      close: async () => void db.close(),
    };
  },
};

export const postgresBackend: TestBackend = {
  name: "postgres",
  freshDatabase: async () => ({
    url: await postgresDatabase(),
    schema: `fi_${process.pid}_${nextSchema++}`,
  }),
  reader: async (database) => {
    const client = new pg.Client(connectionConfig(database.url!, database.schema));
    await client.connect();
    return {
      all: async <T>(sql: string, params: readonly unknown[] = []) => {
        let n = 0;
        return (
          await client.query(
            sql.replace(/\?/g, () => `$${++n}`),
            [...params],
          )
        ).rows as T[];
      },
      indexNames: async (names) =>
        (
          await client.query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY($1) ORDER BY indexname",
            [names],
          )
        ).rows.map((r: { indexname: string }) => r.indexname),
      close: () => client.end(),
    };
  },
};

/** Both backends, for `describe.each(BACKENDS)`. */
export const BACKENDS: readonly TestBackend[] = [sqliteBackend, postgresBackend];

/** Stops the file's PostgreSQL if it started one (call in afterAll); the run's shared one stops with the run. */
export async function stopFileBackends(): Promise<void> {
  postgresUrl = undefined;
  if (postgres === undefined) return;
  const server = await postgres;
  postgres = undefined;
  await server.stop();
}
