import pg from "pg";

/**
 * The webhook outbox's lock (a transaction-level advisory lock of the schema): event ids grow in
 * commit order because every transaction that writes events takes it first (migrations/schemaV7.ts).
 */
export const OUTBOX_LOCK_SQL = `pg_advisory_xact_lock(hashtext('flashindex:outbox:' || current_schema()))`;

/** Connections of the pool a store opens: the writer's transactions, readers and late attribution. */
export const POSTGRES_POOL_SIZE = 4;
/** How long a connection may take to open before the store gives up (then exit 75: it may pass). */
export const POSTGRES_CONNECT_TIMEOUT_MS = 10_000;
/** Idle pooled connections are closed after this long. */
export const POSTGRES_IDLE_TIMEOUT_MS = 30_000;
/**
 * TCP keepalive probes start after this much silence: a server that vanished without closing the
 * connection (a host or network gone) fails its queries within a minute or two instead of after the
 * operating system's default of two hours. No query timeout: an index build may rightly take long.
 */
export const POSTGRES_KEEPALIVE_DELAY_MS = 10_000;

const INT8_OID = 20;

/**
 * Type parsers of our connections: bigint columns (block numbers, unix ms, ids) as JS numbers, all
 * below 2^53; numeric (token values) stays a decimal string. Per connection, not pg's global registry.
 */
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/** Connection settings of one deployment: the URL and the schema every name resolves in. */
export function connectionConfig(url: string, schema: string): pg.ClientConfig {
  return {
    connectionString: url,
    // The config lets only plain lower-case names through; quoted anyway, as the driver quotes identifiers.
    options: `-c search_path=${startupOptionValue(pg.escapeIdentifier(schema))}`,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: POSTGRES_KEEPALIVE_DELAY_MS,
    types: TYPES,
    application_name: "flashindex",
  };
}

/** A value inside libpq's startup `options`: whitespace and backslashes escaped with a backslash (the server splits on whitespace). */
function startupOptionValue(value: string): string {
  return value.replace(/[\\\s]/g, (c) => `\\${c}`);
}

export function createPool(url: string, schema: string): pg.Pool {
  const pool = new pg.Pool({
    ...connectionConfig(url, schema),
    max: POSTGRES_POOL_SIZE,
    idleTimeoutMillis: POSTGRES_IDLE_TIMEOUT_MS,
  });
  // Note: an idle pooled connection cut by the server emits 'error' on the pool; the next query opens another.
  pool.on("error", () => undefined);
  // A connection cut while checked out rejects its query (that is how the cut is reported); the
  // client's own 'error' event would otherwise be an uncaught exception.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/**
 * Runs `work` in one transaction on a pooled connection (after `guard`); rolls back when it throws. With
 * `outboxLock`, the transaction first takes the webhook outbox's lock (schemaV7.ts): a transaction
 * that may write webhook events takes it before any row lock, so two such writers never deadlock.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: {
    outboxLock?: boolean;
    guard?: ((client: pg.PoolClient) => Promise<void>) | undefined;
  } = {},
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(options.outboxLock === true ? `BEGIN; SELECT ${OUTBOX_LOCK_SQL}` : "BEGIN");
    // The guard (the writer epoch's check) runs first inside the transaction, before anything is written.
    await options.guard?.(client);
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
