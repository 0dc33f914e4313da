import type pg from "pg";
import type { Hex } from "viem";
import type { Metrics } from "../../ops/metrics.js";
import type { Store } from "../store.js";
import { RECENT_WEBHOOK_ATTEMPTS } from "../statusSnapshotLimits.js";
import { createPostgresAuthorizationStates } from "./authorizationStates.js";
import { createPostgresChainEnd } from "./chainEnd.js";
import { createPostgresLifecycle } from "./lifecycle.js";
import { createPostgresNonceBook } from "./nonceBook.js";
import { createPostgresCancels } from "./orderCancels.js";
import { createPostgresCaptures } from "./orderCaptures.js";
import { createPostgresOrders } from "./orders.js";
import { createPostgresOwedBlocks } from "./owedAttribution.js";
import { createPostgresReaderIndexes } from "./readerIndexes.js";
import { createPostgresRegistrations } from "./registrations.js";
import { insertAttributionRows, insertPackedAttribution } from "./rowWriter.js";
import { countPostgresRowsByStatus } from "./rowsByStatus.js";
import { readPostgresStatusSnapshot } from "./statusSnapshot.js";
import { createPostgresSyncedRanges } from "./syncedRanges.js";
import { createPostgresWebhookOutbox } from "./webhookOutbox.js";
import { createPostgresWindowWriter } from "./windowWriter.js";
import { createWriteQueue } from "./writeQueue.js";
import { createPostgresSettlements } from "./x402Settlements.js";

export type PostgresStoreDeps = {
  pool: pg.Pool;
  chainId: number;
  location: string;
  metrics: Pick<Metrics, "dbWriteDuration">;
  /** Throws when the writer lock's connection was lost (another writer may have taken over). */
  checkWriter?: (() => void) | undefined;
  /**
   * This writer's epoch (writerEpoch.ts): every write transaction checks it first. Undefined: a
   * store that holds no writer lock.
   */
  writerEpoch?: string | undefined;
  /** Runs after the pool is closed (the writer lock's release). */
  onClose?: (() => Promise<void>) | undefined;
};

/**
 * The Store over a bounded pool of Postgres connections, assembled from its parts (one file per
 * concern, named as its SQLite counterpart in sqlite/). Who waits for whom: writeQueue.ts. Each
 * part works on the connection a transaction or a read hands it.
 */
export function createPostgresStore(deps: PostgresStoreDeps): Store {
  const { pool, chainId } = deps;
  let closed = false;
  const queue = createWriteQueue(deps);
  const { read, write } = queue;
  /**
   * Orders, captures, cancels, nonces and settlements: written beside other processes
   * (WriteQueue.beside).
   */
  const beside =
    (outboxLock: boolean) =>
    <T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> =>
      queue.beside(work, { outboxLock });
  const besideWithOutbox = beside(true);
  const webhooks = createPostgresWebhookOutbox({
    pool,
    read,
    location: deps.location,
    guard: queue.guard,
  });

  return {
    backend: "postgres",
    location: deps.location,
    syncedRanges: (token) => read((c) => createPostgresSyncedRanges(c, chainId).list(token)),
    checkpoint: (token, startBlock) =>
      read((c) => createPostgresSyncedRanges(c, chainId).checkpoint(token, startBlock)),
    // The planner's estimate: COUNT(*) would scan the table.
    sizeBytes: () =>
      read(async (c) => {
        const { rows } = await c.query(
          `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS size FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')`,
        );
        return rows[0].size as number;
      }),
    storedLogCount: () =>
      read(async (c) =>
        Math.max(
          0,
          Number(
            (await c.query("SELECT reltuples FROM pg_class WHERE oid = 'logs'::regclass")).rows[0]
              .reltuples,
          ),
        ),
      ),
    openWindowWriter: () => createPostgresWindowWriter(queue, chainId),
    // A window's attribution is stored with it (insertPackedAttribution), never staged: staging it
    // as SQLite does was tried and did not pay here (100,000 and 400,000 synthetic logs with
    // attribution, no faster).
    stagedAttribution: { pending: async () => false, move: async () => 0 },
    readerIndexes: createPostgresReaderIndexes(queue),

    applyChainChange: (change, now) =>
      write(change.kind, async (client) => {
        if (change.endsAt !== undefined)
          await createPostgresChainEnd(client, chainId).cutSyncedAt(change.endsAt);
        return createPostgresLifecycle(client, chainId).applyChainChange(change, now);
      }),
    insertPreconfirmed: (rows, now) =>
      write("preconfirmed", (c) =>
        createPostgresLifecycle(c, chainId).insertPreconfirmed(rows, now),
      ),
    preconfirmedThrough: (blockNumber) =>
      read((c) => createPostgresLifecycle(c, chainId).preconfirmedThrough(blockNumber)),
    finalizeThrough: (blockNumber, now) =>
      write("finalize", (c) =>
        createPostgresLifecycle(c, chainId).finalizeThrough(blockNumber, now),
      ),
    // As on SQLite (sqliteStore.ts): flagged rows end the synced ranges below their block.
    removeLog: (log, now) =>
      write("removed_flag", async (c) => {
        const changed = await createPostgresLifecycle(c, chainId).removeLog(log, now);
        if (changed > 0) await createPostgresChainEnd(c, chainId).cutSyncedAt(log.blockNumber - 1);
        return changed;
      }),
    unsettledBlocks: () => read((c) => createPostgresLifecycle(c, chainId).unsettledBlocks()),
    liveBlocksAbove: (blockNumber) =>
      read((c) => createPostgresChainEnd(c, chainId).liveBlocksAbove(blockNumber)),

    unattributed: (txHashes) =>
      read(async (c) => {
        const { rows } = await c.query(
          "SELECT tx_hash FROM transactions WHERE tx_hash = ANY($1::text[])",
          [txHashes],
        );
        const stored = new Set(rows.map((r: { tx_hash: Hex }) => r.tx_hash));
        return txHashes.filter((hash) => !stored.has(hash));
      }),
    insertAttribution: (transactions, now) =>
      write("attribution", (c) => insertAttributionRows(c, transactions, now)),
    owedAttribution: {
      count: () => read((c) => createPostgresOwedBlocks(c).count()),
      next: (limit) => read((c) => createPostgresOwedBlocks(c).next(limit)),
      pay: (blocks, packed) =>
        write("attribution", async (c) => {
          const stored = await insertPackedAttribution(c, packed);
          await createPostgresOwedBlocks(c).clear(blocks);
          return stored;
        }),
    },
    saveRegistration: (wallet, code, now) =>
      write("attribution", (c) => createPostgresRegistrations(c).save(wallet, code, now)),
    registration: (wallet) => read((c) => createPostgresRegistrations(c).get(wallet)),

    // Orders are written beside the daemon by other processes: not through this process's write
    // queue alone.
    addOrder: (order, now) => besideWithOutbox((c) => createPostgresOrders(c).add(order, now)),
    voidOrder: (id, now) => besideWithOutbox((c) => createPostgresOrders(c).void(id, now)),
    expireOrders: (now) => write("orders", (c) => createPostgresOrders(c).expire(now)),
    getOrder: (id) => read((c) => createPostgresOrders(c).get(id)),
    listOrders: (filter) => read((c) => createPostgresOrders(c).list(filter)),
    listTransitions: (orderId) => read((c) => createPostgresOrders(c).transitions(orderId)),
    voidedThenCapturedSince: (afterId) =>
      read((c) => createPostgresOrders(c).voidedThenCapturedSince(afterId)),
    captures: createPostgresCaptures(chainId, besideWithOutbox, read),
    cancels: createPostgresCancels(chainId, besideWithOutbox),
    nonces: createPostgresNonceBook(chainId, beside(false), read),
    settlements: createPostgresSettlements(besideWithOutbox, read),
    readMeta: (key) =>
      read(
        async (c) => (await c.query("SELECT value FROM meta WHERE key = $1", [key])).rows[0]?.value,
      ),
    writeMeta: (key, value) =>
      write(
        "orders",
        async (c) =>
          void (await c.query(
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
          )),
      ),

    authorizationState: (token, authorizer, nonce) =>
      read((c) => createPostgresAuthorizationStates(c, chainId)(token, authorizer, nonce)),
    countRowsByStatus: (token) => read((c) => countPostgresRowsByStatus(c, chainId, token)),
    statusSnapshot: async (tokens, now) => {
      // One pooled connection at a time: never hold one while waiting for another (a pool of 4
      // could deadlock).
      const [backlog, attempts] = [
        await webhooks.backlog(),
        await webhooks.lastAttempts(RECENT_WEBHOOK_ATTEMPTS),
      ];
      return {
        ...(await read((c) => readPostgresStatusSnapshot(c, chainId, tokens, now))),
        webhooks: backlog,
        webhookAttempts: attempts,
      };
    },
    webhooks,

    onCommit: (listener) => queue.committed.subscribe(listener),
    isClosed: () => closed,
    close: async () => {
      if (closed) return;
      closed = true;
      await queue.drained();
      await pool.end();
      await deps.onClose?.();
    },
  };
}
