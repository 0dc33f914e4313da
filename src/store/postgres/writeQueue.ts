import type pg from "pg";
import type { Metrics } from "../../ops/metrics.js";
import { createCommitSignal } from "../commitSignal.js";
import { timed, type WriteKind } from "../timedWrite.js";
import { inTransaction, OUTBOX_LOCK_SQL } from "./connection.js";
import { asPostgresError } from "./postgresErrors.js";
import { checkWriterEpoch } from "./writerEpoch.js";

export type WriteQueueDeps = {
  pool: pg.Pool;
  location: string;
  metrics: Pick<Metrics, "dbWriteDuration">;
  /** Throws when the writer lock's connection was lost (another writer may have taken over). */
  checkWriter?: (() => void) | undefined;
  /**
   * This writer's epoch (writerEpoch.ts): every write transaction checks it first. Undefined: no
   * writer lock held.
   */
  writerEpoch?: string | undefined;
};

/**
 * How the Postgres store's work reaches the pool. Writes of this process run one at a time (one
 * writer, as with SQLite: a pre-confirmation and the block that confirms it are never applied side
 * by side), each in one transaction; reads use any pooled connection. The one exception: backfill
 * windows (pure inserts of disjoint block ranges) may run side by side with each other, on two
 * server processes instead of one (`backfill` keeps at most COMMITS_IN_FLIGHT of them); any other
 * write waits for them, and they wait for it. Every committed write tells `committed`.
 */
export function createWriteQueue(deps: WriteQueueDeps) {
  const { pool, metrics, location } = deps;
  /**
   * Everything submitted so far (what the next exclusive write waits for), and the last exclusive
   * write.
   */
  let tail: Promise<unknown> = Promise.resolve();
  let lastExclusive: Promise<unknown> = Promise.resolve();
  const committed = createCommitSignal();
  const epoch = deps.writerEpoch;
  const guard =
    epoch === undefined
      ? undefined
      : (client: pg.PoolClient) => checkWriterEpoch(client, epoch, location);

  /**
   * Runs `work` in one transaction, timed under `kind`; a connection lost mid-run is an outage
   * (exit 75), named without credentials.
   */
  function transaction<T>(
    kind: WriteKind,
    work: (client: pg.PoolClient) => Promise<T>,
    outboxLock: boolean,
  ): Promise<T> {
    deps.checkWriter?.();
    return timed(metrics, kind, () => inTransaction(pool, work, { outboxLock, guard })).then(
      (result) => (committed.notify(), result),
      (error: unknown) => {
        throw asPostgresError(error, location);
      },
    );
  }

  /** Runs `work` on any pooled connection, outside a transaction of this queue. */
  const read = <T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> =>
    (async () => {
      const client = await pool.connect().catch((error: unknown) => {
        throw asPostgresError(error, location);
      });
      try {
        return await work(client);
      } finally {
        client.release();
      }
    })();

  return {
    committed,
    guard,
    read,

    /** One write transaction, after every write submitted before it. */
    write: <T>(kind: WriteKind, work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
      const run = tail.then(() => transaction(kind, work, true));
      tail = lastExclusive = run.catch(() => undefined);
      return run;
    },

    /**
     * A backfill window's transaction: after the last exclusive write, beside other windows. It
     * takes the outbox lock first only when its blocks can produce webhook events (an active
     * subscription starts at or below its last block): windows that write no event must not queue
     * on it.
     */
    writeWindow<T>(lastBlock: number, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
      const run = lastExclusive.then(() =>
        transaction(
          "backfill_window",
          async (client) => {
            const { rows } = await client.query("SELECT webhook_events_from_block() AS from_block");
            const fromBlock = rows[0].from_block as number | null;
            if (fromBlock !== null && lastBlock >= fromBlock)
              await client.query(`SELECT ${OUTBOX_LOCK_SQL}`);
            return work(client);
          },
          false,
        ),
      );
      tail = Promise.allSettled([tail, run]);
      return run;
    },

    /**
     * A transaction outside this process's queue, timed under "orders": orders, captures, cancels,
     * nonces and settlements are written beside the daemon by other processes too, and Postgres
     * orders them by row locks (and the outbox lock when `outboxLock`).
     */
    beside<T>(
      work: (client: pg.ClientBase) => Promise<T>,
      options: { outboxLock: boolean },
    ): Promise<T> {
      return timed(metrics, "orders", () => inTransaction(pool, work, options)).then(
        (result) => (committed.notify(), result),
      );
    },

    /** Runs `sql` timed under "index_build" on a pooled connection, beside the queue's writes. */
    besideWrites: (sql: string) =>
      timed(metrics, "index_build", () => read((c) => c.query(sql))).catch((error: unknown) => {
        throw asPostgresError(error, location);
      }),

    /** Settles once every write submitted so far has. */
    drained: (): Promise<unknown> => tail,
  };
}

export type WriteQueue = ReturnType<typeof createWriteQueue>;
