import type { Config } from "../config/types.js";
import type { Metrics } from "../ops/metrics.js";
import { openDatabase, openDatabaseReadOnly, refuseForeignFile } from "./sqlite/openDatabase.js";
import { describeLocation } from "./postgres/location.js";
import { createSqliteStore } from "./sqlite/sqliteStore.js";
import type { Store } from "./store.js";
import { acquireWriterLock, recordWriter } from "./sqlite/writerLock.js";
import type { ChainIdentity, WriterLock } from "./types.js";

/** Moving a SQLite file aside with its WAL (the devnet, when its chain is new): the CLI goes through here. */
export { backupSuffix, moveDatabaseAside } from "./sqlite/moveDatabaseAside.js";

/** Which backend a config selects: `database.url` (or FLASHINDEX_DATABASE_URL) means Postgres, else the SQLite file. */
export function storeLocation(database: Config["database"]): string {
  return database.url === undefined
    ? database.path
    : describeLocation(database.url, database.schema);
}

/** What opening a store needs of the config (a devnet config's settings qualify before its RPC is known). */
export type StoreConfig = Pick<Config, "database" | "chainId">;

export type OpenStoreOptions = {
  metrics: Pick<Metrics, "dbWriteDuration">;
  /** The chain's genesis hash: checked against (and recorded in) the database. */
  identity?: ChainIdentity | undefined;
  /** The writer lock (start, backfill): its holder is recorded so a refused second writer can name it. */
  lock?: WriterLock | undefined;
};

/**
 * Takes the one-writer lock of the configured database before anything is written: a sidecar lock
 * file for SQLite (refusing a foreign file first), an advisory lock for a Postgres schema.
 */
export async function acquireStoreWriterLock(
  config: StoreConfig,
  command: string,
): Promise<WriterLock> {
  const { database } = config;
  if (database.url !== undefined) {
    const { acquirePostgresWriterLock } = await import("./postgres/writerLock.js");
    return acquirePostgresWriterLock(
      database.url,
      database.schema,
      storeLocation(database),
      command,
    );
  }
  refuseForeignFile(database.path);
  return acquireWriterLock(database.path, command);
}

/** Opens (creating and migrating when needed) the configured database for writing, pinned to the chain. */
export async function openStore(config: StoreConfig, options: OpenStoreOptions): Promise<Store> {
  const { database } = config;
  if (database.url !== undefined) {
    const { openPostgresStore } = await import("./postgres/openPostgres.js");
    const lock = options.lock as (WriterLock & { check?: () => void }) | undefined;
    return openPostgresStore(
      { url: database.url, schema: database.schema, chainId: config.chainId },
      {
        metrics: options.metrics,
        identity: options.identity,
        writer: lock?.holder,
        ...(lock?.check === undefined ? {} : { checkWriter: lock.check }),
      },
    );
  }
  const db = openDatabase(database.path, config.chainId, options.identity);
  try {
    if (options.lock !== undefined) recordWriter(db, options.lock.holder);
  } catch (error) {
    db.close();
    throw error;
  }
  return createSqliteStore({ db, chainId: config.chainId, metrics: options.metrics });
}

/** Opens an existing flashindex database for reading only (status, auth, order show/list, cancel). */
export async function openReadOnlyStore(
  config: StoreConfig,
  metrics: Pick<Metrics, "dbWriteDuration">,
): Promise<Store> {
  const { database } = config;
  if (database.url !== undefined) {
    const { openPostgresStoreReadOnly } = await import("./postgres/openPostgres.js");
    return openPostgresStoreReadOnly(
      { url: database.url, schema: database.schema, chainId: config.chainId },
      metrics,
    );
  }
  const db = openDatabaseReadOnly(database.path, config.chainId);
  return createSqliteStore({ db, chainId: config.chainId, metrics });
}
