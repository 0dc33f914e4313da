import type pg from "pg";
import { ConfigError } from "../../errors/base.js";
import type { Metrics } from "../../ops/metrics.js";
import type { ChainIdentity } from "../types.js";
import type { WriterHolder } from "../../rows/writerHolder.js";
import type { Store } from "../store.js";
import { createPool } from "./connection.js";
import { describeLocation } from "./location.js";
import { checkReadable, migratePostgres } from "./migrations/migrate.js";
import { asPostgresError } from "./postgresErrors.js";
import { createPostgresStore } from "./postgresStore.js";
import { takeWriterEpoch } from "./writerEpoch.js";

export type PostgresTarget = { url: string; schema: string; chainId: number };

/**
 * Opens a Postgres store for writing: migrates the schema (creating it when absent) and pins it to
 * one chain, as the SQLite store pins its file: a schema filled from one chain is never mixed with another.
 */
export async function openPostgresStore(
  target: PostgresTarget,
  options: {
    metrics: Pick<Metrics, "dbWriteDuration">;
    identity?: ChainIdentity | undefined;
    writer?: WriterHolder | undefined;
    checkWriter?: () => void;
  },
): Promise<Store> {
  const location = describeLocation(target.url, target.schema);
  const pool = createPool(target.url, target.schema);
  let writerEpoch: string | undefined;
  try {
    const client = await pool.connect();
    try {
      await checkPins(client, location, target.chainId, options.identity);
      await migratePostgres(client, target.schema);
      await checkPins(client, location, target.chainId, options.identity);
      const insert = "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
      await client.query(insert, ["chain_id", String(target.chainId)]);
      if (options.identity !== undefined)
        await client.query(insert, ["genesis_hash", options.identity.genesisHash]);
      if (options.writer !== undefined) {
        await client.query(
          "INSERT INTO meta (key, value) VALUES ('writer', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          [JSON.stringify(options.writer)],
        );
        // Taken while the writer lock is held: from now on an older writer's transactions stop.
        writerEpoch = await takeWriterEpoch(client);
      }
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw asPostgresError(error, location);
  }
  return createPostgresStore({
    pool,
    chainId: target.chainId,
    location,
    metrics: options.metrics,
    checkWriter: options.checkWriter,
    writerEpoch,
  });
}

/** Opens an existing flashindex schema for reading only: never creates or migrates anything. */
export async function openPostgresStoreReadOnly(
  target: PostgresTarget,
  metrics: Pick<Metrics, "dbWriteDuration">,
): Promise<Store> {
  const location = describeLocation(target.url, target.schema);
  const pool = createPool(target.url, target.schema);
  try {
    const client = await pool.connect();
    try {
      await checkReadable(client, location);
      await checkPins(client, location, target.chainId, undefined);
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw asPostgresError(error, location);
  }
  return createPostgresStore({ pool, chainId: target.chainId, location, metrics });
}

async function checkPins(
  client: pg.ClientBase,
  location: string,
  chainId: number,
  identity: ChainIdentity | undefined,
): Promise<void> {
  const present = await client.query("SELECT to_regclass('meta') IS NOT NULL AS present");
  if (present.rows[0].present !== true) return;
  const { rows } = await client.query(
    "SELECT key, value FROM meta WHERE key IN ('chain_id', 'genesis_hash')",
  );
  const stored = new Map(
    (rows as Array<{ key: string; value: string }>).map((r) => [r.key, r.value]),
  );
  const storedChainId = stored.get("chain_id");
  if (storedChainId !== undefined && storedChainId !== String(chainId))
    throw new ConfigError(
      "chainId",
      `config says ${chainId} but database ${location} holds chain ${storedChainId}; use another database.schema`,
    );
  const storedGenesis = stored.get("genesis_hash");
  if (
    identity !== undefined &&
    storedGenesis !== undefined &&
    storedGenesis !== identity.genesisHash
  )
    throw new ConfigError(
      "database.schema",
      `database ${location} belongs to chain ${chainId} with genesis ${storedGenesis}, but the RPC serves genesis ${identity.genesisHash}; use another database.schema`,
    );
}
