import type { Database } from "better-sqlite3";
import { FatalError } from "../errors.js";
import { SCHEMA_V1 } from "./schemaV1.js";
import { SCHEMA_V2 } from "./schemaV2.js";
import { SCHEMA_V3 } from "./schemaV3.js";
import { SCHEMA_V4 } from "./schemaV4.js";

/** Ordered schema steps; `PRAGMA user_version` holds the last applied. Never edit a shipped step: add one. */
const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  { version: 1, sql: SCHEMA_V1 },
  { version: 2, sql: SCHEMA_V2 },
  { version: 3, sql: SCHEMA_V3 },
  { version: 4, sql: SCHEMA_V4 },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** Applies the missing migrations, each in its own transaction; safe to run on every start. */
export function migrate(db: Database): { from: number; to: number } {
  const from = db.pragma("user_version", { simple: true }) as number;
  if (from > SCHEMA_VERSION)
    throw new FatalError(
      `Database schema version ${from} is newer than this flashindex understands (${SCHEMA_VERSION}): upgrade flashindex`,
    );
  for (const migration of MIGRATIONS) {
    if (migration.version <= from) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
  return { from, to: SCHEMA_VERSION };
}
