import type pg from "pg";
import type { Hex } from "viem";
import type { Metrics } from "../../ops/metrics.js";
import { createCommitSignal } from "../commitSignal.js";
import type { RegistrationRow } from "../types.js";
import type { Store, WindowWriter } from "../store.js";
import { timed, type WriteKind } from "../timedWrite.js";
import { inTransaction, OUTBOX_LOCK_SQL } from "./connection.js";
import { asPostgresError } from "./postgresErrors.js";
import { postgresChainEnd } from "./chainEnd.js";
import { postgresLifecycle, postgresSyncedRanges } from "./lifecycle.js";
import { postgresOrders } from "./orders.js";
import { createPostgresSettlements } from "./x402Settlements.js";
import { createPostgresCaptures } from "./orderCaptures.js";
import { createPostgresCancels } from "./orderCancels.js";
import { createPostgresNonceBook } from "./nonceBook.js";
import { readPostgresStatusSnapshot } from "./statusSnapshot.js";
import { createPostgresWebhookOutbox } from "./webhookOutbox.js";
import { DEFERRED_FOREIGN_KEYS } from "./deferredForeignKeys.js";
import { insertAttributionRows, insertLogRows, insertPackedAttribution } from "./rowWriter.js";
import { copyWindow } from "./windowCopy.js";
import { postgresOwedBlocks } from "./owedAttribution.js";
import { checkWriterEpoch } from "./writerEpoch.js";
import { AUTHORIZATION_STATE_COLUMNS } from "../authorizationStateColumns.js";
import { READER_INDEXES } from "../readerIndexDefinitions.js";
import { RECENT_WEBHOOK_ATTEMPTS } from "../statusSnapshotLimits.js";

/** One agent_registrations row by wallet (lower case), as RegistrationRow. */
const REGISTRATION_SELECT = `SELECT wallet_address AS "walletAddress", builder_code AS "builderCode", registered_at AS "registeredAt",
  last_confirmed_at AS "lastConfirmedAt" FROM agent_registrations WHERE wallet_address = $1`;

export type PostgresStoreDeps = {
  pool: pg.Pool;
  chainId: number;
  location: string;
  metrics: Pick<Metrics, "dbWriteDuration">;
  /** Throws when the writer lock's connection was lost (another writer may have taken over). */
  checkWriter?: (() => void) | undefined;
  /** This writer's epoch (writerEpoch.ts): every write transaction checks it first. Undefined: a store that holds no writer lock. */
  writerEpoch?: string | undefined;
  /** Runs after the pool is closed (the writer lock's release). */
  onClose?: (() => Promise<void>) | undefined;
};

/**
 * The Store over a bounded pool of Postgres connections. Writes of this process run one at a time
 * (one writer, as with SQLite: a pre-confirmation and the block that confirms it are never applied
 * side by side), each in one transaction; reads use any pooled connection. The one exception:
 * backfill windows (pure inserts of disjoint block ranges) may run side by side with each other, on
 * two server processes instead of one (`backfill` keeps at most COMMITS_IN_FLIGHT of them); any other
 * write waits for them, and they wait for it.
 */
export function createPostgresStore(deps: PostgresStoreDeps): Store {
  const { pool, chainId, metrics } = deps;
  let closed = false;
  /** Everything submitted so far (what the next exclusive write waits for), and the last exclusive write. */
  let tail: Promise<unknown> = Promise.resolve();
  let lastExclusive: Promise<unknown> = Promise.resolve();
  const committed = createCommitSignal();
  const epoch = deps.writerEpoch;
  const guard = epoch === undefined ? undefined : (client: pg.PoolClient) => checkWriterEpoch(client, epoch, deps.location);

  /** Runs `work` in one transaction, timed under `kind`; a connection lost mid-run is an outage (exit 75), named without credentials. */
  function transaction<T>(kind: WriteKind, work: (client: pg.PoolClient) => Promise<T>, outboxLock: boolean): Promise<T> {
    deps.checkWriter?.();
    return timed(metrics, kind, () => inTransaction(pool, work, { outboxLock, guard })).then(
      (result) => (committed.notify(), result),
      (error: unknown) => {
        throw asPostgresError(error, deps.location);
      },
    );
  }

  /** One write transaction, after every write submitted before it. */
  function write<T>(kind: WriteKind, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const run = tail.then(() => transaction(kind, work, true));
    tail = lastExclusive = run.catch(() => undefined);
    return run;
  }

  /**
   * A backfill window's transaction: after the last exclusive write, beside other windows. It takes
   * the outbox lock first only when its blocks can produce webhook events (an active subscription
   * starts at or below its last block): windows that write no event must not queue on it.
   */
  function writeWindow<T>(lastBlock: number, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const run = lastExclusive.then(() =>
      transaction(
        "backfill_window",
        async (client) => {
          const { rows } = await client.query("SELECT webhook_events_from_block() AS from_block");
          const fromBlock = rows[0].from_block as number | null;
          if (fromBlock !== null && lastBlock >= fromBlock) await client.query(`SELECT ${OUTBOX_LOCK_SQL}`);
          return work(client);
        },
        false,
      ),
    );
    tail = Promise.allSettled([tail, run]);
    return run;
  }
  const read = <T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> =>
    (async () => {
      const client = await pool.connect().catch((error: unknown) => {
        throw asPostgresError(error, deps.location);
      });
      try {
        return await work(client);
      } finally {
        client.release();
      }
    })();

  const webhooks = createPostgresWebhookOutbox({ pool, read, location: deps.location, guard });

  const windowWriter = (): WindowWriter => {
    const sent = new Set<Promise<unknown>>();
    return {
      commit(window, now) {
        const committed = writeWindow(window.to, async (client) => {
          // Bulk COPY; a window holding an already stored log goes in by the statement that skips it.
          const counts = (await copyWindow(client, window.rows, now)) ?? (await insertLogRows(client, window.rows, now));
          await insertPackedAttribution(client, window.attribution);
          const synced = postgresSyncedRanges(client, chainId);
          // What the window owes is recorded with its range: a window fetched again after a crash owes it again.
          if (window.owed !== undefined) await postgresOwedBlocks(client).record(window.owed, now);
          for (const token of window.tokens) await synced.add(token, window);
          return counts;
        });
        sent.add(committed);
        const forget = () => void sent.delete(committed);
        committed.then(forget, forget);
        return committed;
      },
      close: async () => void (await Promise.allSettled([...sent])),
    };
  };

  /** An index left invalid by an interrupted concurrent build, or a key added but not yet validated, counts as missing. */
  const missingReaderIndexes = (): Promise<string[]> =>
    read(async (c) => {
      const { rows } = await c.query(
        `SELECT name FROM unnest($1::text[]) AS name
         WHERE NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(name) AND indisvalid)
         UNION ALL
         SELECT name FROM unnest($2::text[]) AS name
         WHERE NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = name AND connamespace = current_schema()::regnamespace AND convalidated)`,
        [READER_INDEXES.map((i) => i.name), DEFERRED_FOREIGN_KEYS.map((k) => k.name)],
      );
      return rows.map((r: { name: string }) => r.name);
    });

  return {
    backend: "postgres",
    location: deps.location,
    syncedRanges: (token) => read((c) => postgresSyncedRanges(c, chainId).list(token)),
    checkpoint: (token, startBlock) => read((c) => postgresSyncedRanges(c, chainId).checkpoint(token, startBlock)),
    // The planner's estimate: COUNT(*) would scan the table.
    sizeBytes: () =>
      read(async (c) => {
        const { rows } = await c.query(
          `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS size FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')`,
        );
        return rows[0].size as number;
      }),
    storedLogCount: () => read(async (c) => Math.max(0, Number((await c.query("SELECT reltuples FROM pg_class WHERE oid = 'logs'::regclass")).rows[0].reltuples))),
    openWindowWriter: () => windowWriter(),
    // A window's attribution is stored with it (insertPackedAttribution), never staged: staging it as
    // SQLite does was tried and did not pay here (100,000 and 400,000 synthetic logs with attribution, no faster).
    stagedAttribution: { pending: async () => false, move: async () => 0 },
    readerIndexes: {
      missing: () => missingReaderIndexes(),
      drop: () =>
        write("index_build", async (c) => {
          await c.query(READER_INDEXES.map((i) => `DROP INDEX IF EXISTS ${i.name}`).join("; "));
          await c.query(DEFERRED_FOREIGN_KEYS.map((k) => `ALTER TABLE ${k.table} DROP CONSTRAINT IF EXISTS ${k.name}`).join("; "));
        }),
      /**
       * Beside live writes (the daemon), indexes are built CONCURRENTLY and keys validated under a
       * lock that lets inserts through, outside this process's write queue: pre-confirmations keep
       * landing during a build that may take minutes (only adding a key, NOT VALID and instant, takes
       * a turn in it). Otherwise (`flashindex backfill`, the only writer) each is built in one
       * exclusive write: one table scan instead of two.
       */
      build: async (options = {}) => {
        const built: string[] = [];
        const missing = new Set(await missingReaderIndexes());
        const concurrently = options.mode === "daemon";
        const besideWrites = (sql: string) =>
          timed(metrics, "index_build", () => read((c) => c.query(sql))).catch((error: unknown) => {
            throw asPostgresError(error, deps.location);
          });
        const build = (sql: string) => (concurrently ? besideWrites(sql) : write("index_build", (c) => c.query(sql)));
        for (const index of READER_INDEXES) {
          if (!missing.has(index.name)) continue;
          if (options.signal?.aborted === true) return built;
          // An index a killed concurrent build left invalid is dropped first.
          await build(`DROP INDEX ${concurrently ? "CONCURRENTLY " : ""}IF EXISTS ${index.name}`);
          await build(index.sql.replace("CREATE INDEX IF NOT EXISTS", concurrently ? "CREATE INDEX CONCURRENTLY" : "CREATE INDEX"));
          built.push(index.name);
        }
        for (const key of DEFERRED_FOREIGN_KEYS) {
          if (!missing.has(key.name)) continue;
          if (options.signal?.aborted === true) return built;
          await write("index_build", async (c) => {
            const present = await c.query("SELECT 1 FROM pg_constraint WHERE conname = $1 AND connamespace = current_schema()::regnamespace", [key.name]);
            if (present.rows.length === 0) await c.query(`ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition} NOT VALID`);
          });
          // Checked against every stored row (one join, not a lookup per row): a row without its
          // log fails the build loudly and leaves the key unvalidated, never silently unchecked.
          await build(`ALTER TABLE ${key.table} VALIDATE CONSTRAINT ${key.name}`);
          built.push(key.name);
        }
        return built;
      },
    },

    applyChainChange: (change, now) =>
      write(change.kind, async (client) => {
        if (change.endsAt !== undefined) await postgresChainEnd(client, chainId).cutSyncedAt(change.endsAt);
        return postgresLifecycle(client, chainId).applyChainChange(change, now);
      }),
    insertPreconfirmed: (rows, now) => write("preconfirmed", (c) => postgresLifecycle(c, chainId).insertPreconfirmed(rows, now)),
    preconfirmedThrough: (blockNumber) => read((c) => postgresLifecycle(c, chainId).preconfirmedThrough(blockNumber)),
    finalizeThrough: (blockNumber, now) => write("finalize", (c) => postgresLifecycle(c, chainId).finalizeThrough(blockNumber, now)),
    // As on SQLite (sqliteStore.ts): flagged rows end the synced ranges below their block.
    removeLog: (log, now) =>
      write("removed_flag", async (c) => {
        const changed = await postgresLifecycle(c, chainId).removeLog(log, now);
        if (changed > 0) await postgresChainEnd(c, chainId).cutSyncedAt(log.blockNumber - 1);
        return changed;
      }),
    unsettledBlocks: () => read((c) => postgresLifecycle(c, chainId).unsettledBlocks()),
    liveBlocksAbove: (blockNumber) => read((c) => postgresChainEnd(c, chainId).liveBlocksAbove(blockNumber)),

    unattributed: (txHashes) =>
      read(async (c) => {
        const { rows } = await c.query("SELECT tx_hash FROM transactions WHERE tx_hash = ANY($1::text[])", [txHashes]);
        const stored = new Set(rows.map((r: { tx_hash: Hex }) => r.tx_hash));
        return txHashes.filter((hash) => !stored.has(hash));
      }),
    insertAttribution: (transactions, now) => write("attribution", (c) => insertAttributionRows(c, transactions, now)),
    owedAttribution: {
      count: () => read((c) => postgresOwedBlocks(c).count()),
      next: (limit) => read((c) => postgresOwedBlocks(c).next(limit)),
      pay: (blocks, packed) =>
        write("attribution", async (c) => {
          const stored = await insertPackedAttribution(c, packed);
          await postgresOwedBlocks(c).clear(blocks);
          return stored;
        }),
    },
    saveRegistration: (wallet, code, now) =>
      write("attribution", async (c) => {
        const key = wallet.toLowerCase();
        const select = REGISTRATION_SELECT;
        const before = (await c.query(`${select} FOR UPDATE`, [key])).rows[0] as RegistrationRow | undefined;
        await c.query(
          `INSERT INTO agent_registrations (wallet_address, builder_code, registered_at, last_confirmed_at) VALUES ($1, $2, $3, $3)
           ON CONFLICT (wallet_address) DO UPDATE SET
             registered_at = CASE WHEN agent_registrations.builder_code = excluded.builder_code THEN agent_registrations.registered_at ELSE excluded.registered_at END,
             builder_code = excluded.builder_code, last_confirmed_at = excluded.last_confirmed_at`,
          [key, code, now],
        );
        const row = (await c.query(select, [key])).rows[0] as RegistrationRow;
        if (before === undefined) return { status: "new" as const, row };
        if (before.builderCode === code) return { status: "confirmed" as const, row };
        return { status: "changed" as const, previousCode: before.builderCode, row };
      }),

    registration: (wallet) =>
      read(async (c) => {
        return (await c.query(REGISTRATION_SELECT, [wallet.toLowerCase()])).rows[0] as RegistrationRow | undefined;
      }),

    // Orders are written beside the daemon by other processes: not through this process's write queue alone.
    addOrder: (order, now) => timedOrders(() => inTransaction(pool, (c) => postgresOrders(c).add(order, now), { outboxLock: true })),
    voidOrder: (id, now) => timedOrders(() => inTransaction(pool, (c) => postgresOrders(c).void(id, now), { outboxLock: true })),
    expireOrders: (now) => write("orders", (c) => postgresOrders(c).expire(now)),
    getOrder: (id) => read((c) => postgresOrders(c).get(id)),
    listOrders: (filter) => read((c) => postgresOrders(c).list(filter)),
    listTransitions: (orderId) => read((c) => postgresOrders(c).transitions(orderId)),
    voidedThenCapturedSince: (afterId) => read((c) => postgresOrders(c).voidedThenCapturedSince(afterId)),
    captures: createPostgresCaptures(chainId, (work) => timedOrders(() => inTransaction(pool, work, { outboxLock: true })), read),
    cancels: createPostgresCancels(chainId, (work) => timedOrders(() => inTransaction(pool, work, { outboxLock: true }))),
    nonces: createPostgresNonceBook(chainId, (work) => timedOrders(() => inTransaction(pool, work, { outboxLock: false })), read),
    settlements: createPostgresSettlements((work) => timedOrders(() => inTransaction(pool, work, { outboxLock: true })), read),
    readMeta: (key) => read(async (c) => (await c.query("SELECT value FROM meta WHERE key = $1", [key])).rows[0]?.value),
    writeMeta: (key, value) =>
      write("orders", async (c) => void (await c.query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value]))),

    authorizationState: (token, authorizer, nonce) =>
      read(async (c) => {
        const { rows } = await c.query(
          `SELECT ${AUTHORIZATION_STATE_COLUMNS} FROM authorization_states WHERE chain_id = $1 AND token = $2 AND authorizer = $3 AND nonce = $4`,
          [chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()],
        );
        return rows[0];
      }),
    countRowsByStatus: (token) =>
      read(async (c) => {
        const { rows } = await c.query(
          `SELECT status, SUM(is_transfer)::int AS transfers, SUM(1 - is_transfer)::int AS authorizations FROM (
             SELECT status, 1 AS is_transfer FROM transfers WHERE chain_id = $1 AND token = $2
             UNION ALL
             SELECT status, 0 FROM authorization_events WHERE chain_id = $1 AND token = $2) AS rows_by_status
           GROUP BY status ORDER BY status`,
          [chainId, token],
        );
        return rows;
      }),
    statusSnapshot: async (tokens, now) => {
      // One pooled connection at a time: never hold one while waiting for another (a pool of 4 could deadlock).
      const [backlog, attempts] = [await webhooks.backlog(), await webhooks.lastAttempts(RECENT_WEBHOOK_ATTEMPTS)];
      return { ...(await read((c) => readPostgresStatusSnapshot(c, chainId, tokens, now))), webhooks: backlog, webhookAttempts: attempts };
    },
    webhooks,

    onCommit: (listener) => committed.subscribe(listener),
    isClosed: () => closed,
    close: async () => {
      if (closed) return;
      closed = true;
      await tail;
      await pool.end();
      await deps.onClose?.();
    },
  };

  function timedOrders<T>(work: () => Promise<T>): Promise<T> {
    return timed(metrics, "orders", work).then((result) => (committed.notify(), result));
  }
}
