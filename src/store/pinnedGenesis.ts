import { existsSync, statSync } from "node:fs";
import type { Hex } from "viem";
import type { Metrics } from "../ops/metrics.js";
import { openStore, type StoreConfig } from "./openStore.js";

/** The meta key under which a database records the genesis hash of its chain. */
const GENESIS_HASH_KEY = "genesis_hash";

/**
 * The genesis hash the configured database is pinned to; undefined while it holds none (no file
 * yet, an empty one, or one never pinned). Opens the database for writing, migrating it as the
 * next `start` would: the caller holds the writer lock.
 */
export async function readPinnedGenesis(
  config: StoreConfig,
  metrics: Pick<Metrics, "dbWriteDuration">,
): Promise<Hex | undefined> {
  const { database } = config;
  if (
    database.url === undefined &&
    (database.path === ":memory:" ||
      !existsSync(database.path) ||
      statSync(database.path).size === 0)
  )
    return undefined;
  const store = await openStore(config, { metrics });
  try {
    return (await store.readMeta(GENESIS_HASH_KEY)) as Hex | undefined;
  } finally {
    await store.close();
  }
}
