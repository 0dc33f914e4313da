import type { Database } from "better-sqlite3";
import { FatalError } from "../../../errors/base.js";
import { SCHEMA_V1 } from "./schemaV1.js";
import { SCHEMA_V2 } from "./schemaV2.js";
import { SCHEMA_V3 } from "./schemaV3.js";
import { SCHEMA_V4 } from "./schemaV4.js";
import { migrateToV5 } from "./schemaV5.js";
import { SCHEMA_V6 } from "./schemaV6.js";
import { SCHEMA_V7 } from "./schemaV7.js";
import { SCHEMA_V8 } from "./schemaV8.js";
import { migrateToV9 } from "./schemaV9.js";
import { SCHEMA_V10 } from "./schemaV10.js";
import { matchWebhookTriggersToSubscriptions } from "./schemaV11.js";
import { migrateToV12 } from "./schemaV12.js";
import { SCHEMA_V13 } from "./schemaV13.js";
import { SCHEMA_V14 } from "./schemaV14.js";
import { migrateToV15 } from "./schemaV15.js";
import { migrateToV16 } from "./schemaV16.js";
import { migrateToV17 } from "./schemaV17.js";
import { SCHEMA_V18 } from "./schemaV18.js";
import { SCHEMA_V19 } from "./schemaV19.js";

/** One schema step: SQL, or a function for a step SQL alone cannot express (a table rebuild). */
type Migration = { version: number; apply: string | ((db: Database) => void) };

/** Ordered schema steps; `PRAGMA user_version` holds the last applied. Never edit a shipped step: add one. */
const MIGRATIONS: readonly Migration[] = [
  { version: 1, apply: SCHEMA_V1 },
  { version: 2, apply: SCHEMA_V2 },
  { version: 3, apply: SCHEMA_V3 },
  { version: 4, apply: SCHEMA_V4 },
  { version: 5, apply: migrateToV5 },
  { version: 6, apply: SCHEMA_V6 },
  { version: 7, apply: SCHEMA_V7 },
  { version: 8, apply: SCHEMA_V8 },
  { version: 9, apply: migrateToV9 },
  { version: 10, apply: SCHEMA_V10 },
  { version: 11, apply: matchWebhookTriggersToSubscriptions },
  { version: 12, apply: migrateToV12 },
  { version: 13, apply: SCHEMA_V13 },
  { version: 14, apply: SCHEMA_V14 },
  { version: 15, apply: migrateToV15 },
  { version: 16, apply: migrateToV16 },
  { version: 17, apply: migrateToV17 },
  { version: 18, apply: SCHEMA_V18 },
  { version: 19, apply: SCHEMA_V19 },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/**
 * Applies the missing migrations, each in its own transaction; safe to run on every start.
 * Foreign keys are off while they run (a table rebuild drops a referenced table) and checked after.
 * `target` stops at an older version (tests build the databases earlier releases left).
 */
export function migrate(db: Database, target = SCHEMA_VERSION): { from: number; to: number } {
  const from = db.pragma("user_version", { simple: true }) as number;
  if (from > SCHEMA_VERSION)
    throw new FatalError(
      `Database schema version ${from} is newer than this flashindex understands (${SCHEMA_VERSION}): upgrade flashindex`,
    );
  if (from >= target) return { from, to: from };
  const foreignKeys = db.pragma("foreign_keys", { simple: true }) as number;
  db.pragma("foreign_keys = OFF");
  try {
    for (const migration of MIGRATIONS) {
      if (migration.version <= from || migration.version > target) continue;
      db.transaction(() => {
        if (typeof migration.apply === "string") db.exec(migration.apply);
        else migration.apply(db);
        const broken = db.pragma("foreign_key_check") as unknown[];
        if (broken.length > 0)
          throw new FatalError(
            `Schema step ${migration.version} left ${broken.length} broken foreign key(s); nothing was changed`,
          );
        db.pragma(`user_version = ${migration.version}`);
      }).immediate();
    }
  } finally {
    db.pragma(`foreign_keys = ${foreignKeys}`);
  }
  return { from, to: target };
}
