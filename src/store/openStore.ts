import type { Config } from "../config/types.js";
import type { Metrics } from "../ops/metrics.js";
import { openDatabase, openDatabaseReadOnly, type ChainIdentity } from "./openDatabase.js";
import { createSqliteStore } from "./sqliteStore.js";
import type { Store } from "./store.js";
import { recordWriter, type WriterHolder } from "./writerLock.js";

export type OpenStoreOptions = {
  metrics: Pick<Metrics, "dbWriteDuration">;
  /** The chain's genesis hash: checked against (and recorded in) the database. */
  identity?: ChainIdentity | undefined;
  /** The writer lock's holder (start, backfill): recorded so a refused second writer can name it. */
  writer?: WriterHolder | undefined;
};

/** Opens (creating and migrating when needed) the configured database for writing, pinned to the chain. */
export async function openStore(config: Config, options: OpenStoreOptions): Promise<Store> {
  const db = openDatabase(config.database.path, config.chainId, options.identity);
  try {
    if (options.writer !== undefined) recordWriter(db, options.writer);
  } catch (error) {
    db.close();
    throw error;
  }
  return createSqliteStore({ db, chainId: config.chainId, metrics: options.metrics });
}

/** Opens an existing flashindex database for reading only (status, auth, order show/list). */
export async function openReadOnlyStore(config: Config, metrics: Pick<Metrics, "dbWriteDuration">): Promise<Store> {
  const db = openDatabaseReadOnly(config.database.path, config.chainId);
  return createSqliteStore({ db, chainId: config.chainId, metrics });
}
