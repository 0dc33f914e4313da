import pg from "pg";
import { ConfigError, FatalError } from "../../../errors/base.js";
import { POSTGRES_SCHEMA_V5 } from "./schemaV5.js";
import { POSTGRES_SCHEMA_V6 } from "./schemaV6.js";
import { POSTGRES_SCHEMA_V7 } from "./schemaV7.js";
import { POSTGRES_SCHEMA_V8 } from "./schemaV8.js";
import { POSTGRES_SCHEMA_V12 } from "./schemaV12.js";
import { POSTGRES_SCHEMA_V13 } from "./schemaV13.js";
import { POSTGRES_SCHEMA_V14 } from "./schemaV14.js";
import { POSTGRES_SCHEMA_V15 } from "./schemaV15.js";
import { POSTGRES_SCHEMA_V16 } from "./schemaV16.js";
import { POSTGRES_SCHEMA_V17 } from "./schemaV17.js";
import { POSTGRES_SCHEMA_V18 } from "./schemaV18.js";
import { POSTGRES_SCHEMA_V19 } from "./schemaV19.js";

/**
 * Ordered schema steps, numbered like the SQLite store's versions they match (the first brings a new
 * schema straight to 5). Never edit a shipped step: append one.
 */
export const POSTGRES_MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  { version: 5, sql: POSTGRES_SCHEMA_V5 },
  { version: 6, sql: POSTGRES_SCHEMA_V6 },
  { version: 7, sql: POSTGRES_SCHEMA_V7 },
  { version: 8, sql: POSTGRES_SCHEMA_V8 },
  { version: 12, sql: POSTGRES_SCHEMA_V12 },
  { version: 13, sql: POSTGRES_SCHEMA_V13 },
  { version: 14, sql: POSTGRES_SCHEMA_V14 },
  { version: 15, sql: POSTGRES_SCHEMA_V15 },
  { version: 16, sql: POSTGRES_SCHEMA_V16 },
  { version: 17, sql: POSTGRES_SCHEMA_V17 },
  { version: 18, sql: POSTGRES_SCHEMA_V18 },
  { version: 19, sql: POSTGRES_SCHEMA_V19 },
];

export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;

/** Serialises migrations of one schema across processes (a transaction-level advisory lock). */
const MIGRATION_LOCK = "flashindex:migrate:";

/**
 * Creates the schema when absent and applies the missing steps in one transaction, recording each in
 * `schema_migrations`; safe to run on every start, and by two processes at once.
 */
export async function migratePostgres(
  client: pg.ClientBase,
  schema: string,
): Promise<{ from: number; to: number }> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [MIGRATION_LOCK + schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(schema)}`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version     integer PRIMARY KEY,
      applied_at  timestamptz NOT NULL DEFAULT now())`);
    const from = await schemaVersion(client);
    if (from > POSTGRES_SCHEMA_VERSION)
      throw new FatalError(
        `Database schema version ${from} is newer than this flashindex understands (${POSTGRES_SCHEMA_VERSION}): upgrade flashindex`,
      );
    for (const migration of POSTGRES_MIGRATIONS) {
      if (migration.version <= from) continue;
      await client.query(migration.sql);
      await client.query("INSERT INTO schema_migrations (version) VALUES ($1)", [
        migration.version,
      ]);
    }
    await client.query("COMMIT");
    return { from, to: POSTGRES_SCHEMA_VERSION };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/** The last applied step; 0 for a schema without flashindex's tables. */
export async function schemaVersion(client: pg.ClientBase): Promise<number> {
  const exists = await client.query(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS present",
  );
  if (exists.rows[0].present !== true) return 0;
  const { rows } = await client.query(
    "SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations",
  );
  return Number(rows[0].version);
}

/** For readers: the schema must exist at the current version (a reader never creates or migrates). */
export async function checkReadable(client: pg.ClientBase, location: string): Promise<void> {
  const version = await schemaVersion(client);
  if (version === 0)
    throw new ConfigError(
      "database.url",
      `${location} holds no flashindex tables: run 'flashindex start' or 'backfill' on it first`,
    );
  if (version < POSTGRES_SCHEMA_VERSION)
    throw new ConfigError(
      "database.url",
      `${location} has schema version ${version}, older than ${POSTGRES_SCHEMA_VERSION}: run 'flashindex start' or 'backfill' on it once to upgrade it`,
    );
}
