import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { statSync } from "node:fs";
import type { Metrics } from "../../ops/metrics.js";
import { maintenanceOnThread, type ProcessMode } from "../../ops/threadSettings.js";
import { createAttributionWriter } from "./attributionWriter.js";
import { createSqliteAuthorizationStates } from "./authorizationStates.js";
import { createSqliteChainEnd } from "./chainEnd.js";
import { createCommitSignal } from "../commitSignal.js";
import { createSqliteLifecycle } from "./lifecycle.js";
import { createMaintenance } from "./threads/maintenance.js";
import type { Database } from "./openDatabase.js";
import { createSqliteOrders } from "./orders.js";
import { createSqliteSettlements } from "./x402Settlements.js";
import { createSqliteCaptures } from "./orderCaptures.js";
import { createSqliteCancels } from "./orderCancels.js";
import { createSqliteNonceBook, createSqliteNonceMarks } from "./nonceBook.js";
import { createSqliteReaderIndexes } from "./readerIndexes.js";
import { createStatementCache } from "./statementCache.js";
import { createSqliteOwedBlocks } from "./owedAttribution.js";
import { createStagedAttribution } from "./stagedAttribution.js";
import { createSqliteRegistrations } from "./registrations.js";
import { countSqliteRowsByStatus } from "./rowsByStatus.js";
import { readSqliteStatusSnapshot } from "./statusSnapshot.js";
import { RECENT_WEBHOOK_ATTEMPTS } from "../statusSnapshotLimits.js";
import type { Store } from "../store.js";
import { createSqliteSyncedRanges } from "./syncedRanges.js";
import { timed, type WriteKind } from "../timedWrite.js";
import { createWalCheckpoints } from "./walCheckpoints.js";
import { createSqliteWebhookOutbox } from "./webhookOutbox.js";
import { createWindowWriter } from "./threads/windowWriter.js";
import { createLiveWriteGate, createWriteGateMemory } from "./writeGate.js";
import type { WebhookOutbox } from "../types.js";

export type SqliteStoreDeps = {
  db: Database;
  chainId: number;
  metrics: Pick<Metrics, "dbWriteDuration">;
  /** Runs after the connection is closed (the writer lock's release). */
  onClose?: (() => void) | undefined;
};

/**
 * The Store over one better-sqlite3 connection. Its work is synchronous (SQLite in process is faster
 * so than any round trip); the async methods only wrap it.
 *
 * Threads and their connections to the file (when each starts, its heap and nice value:
 * ops/threadSettings.ts):
 * - main thread, this connection: every live write (pre-confirmations, head blocks, finality,
 *   orders, webhooks, meta) and a short backfill's windows; every read.
 * - decode thread (sync/historical/windowDecoder.ts), no connection: sends a long backfill's requests and
 *   decodes their answers.
 * - window writer (threads/windowWriter.ts), a connection of its own: a long backfill's windows,
 *   each with its synced range.
 * - maintenance thread (threads/maintenance.ts), a connection of its own: a bulk load's end (staged
 *   attribution's move, the reader indexes' build), in the daemon or past a size.
 * - checkpointer (threads/checkpointer.ts, walCheckpoints.ts), a connection of its own: copies the
 *   WAL back (PASSIVE, no write lock) when nudged; nudges made while it runs fold into one more run.
 *
 * Who waits for whom. SQLite has one write lock per file:
 * - This connection's writes and the window writer share it through the live-write gate
 *   (writeGate.ts, atomics on shared memory): a live write raises its flag and the writer steps
 *   aside within WINDOW_YIELD_EVERY_ROWS rows, committing what it has. `gate.hold` waits with
 *   Atomics.wait, ON the event loop: at most LIVE_WRITE_MAX_WAIT_MS (5 s), after which SQLite's busy
 *   timeout (BUSY_TIMEOUT_MS, 5 s) may hold it as long again. Nothing else here blocks the loop.
 * - A maintenance job holds this connection's writes back through `afterJobs` (a promise chain:
 *   they wait without blocking the event loop) and the window writer through the gate (holdWhile).
 * - The checkpointer waits for nobody; the window writer nudges it after each window, a look once
 *   a second at this connection's changes nudges it for the rest.
 */
export function createSqliteStore(deps: SqliteStoreDeps): Store {
  const { db, chainId, metrics } = deps;
  const lifecycle = createSqliteLifecycle(db);
  const synced = createSqliteSyncedRanges(db, chainId);
  const chainEnd = createSqliteChainEnd(db, chainId);
  const attribution = createAttributionWriter(db);
  const authorizationState = createSqliteAuthorizationStates(db, chainId);
  const indexes = createSqliteReaderIndexes(db);
  const statements = createStatementCache(db);
  const orders = createSqliteOrders(db);
  const nonceMarks = createSqliteNonceMarks(db, chainId);
  const registrations = createSqliteRegistrations(db);
  const gate = createLiveWriteGate(createWriteGateMemory());
  const checkpoints = createWalCheckpoints(db);
  /** A bulk load's end, beside live work on a thread of its own (maintenance.ts); this connection's writes wait for it without blocking. */
  const maintenance = createMaintenance(db, gate);
  /** Every write of this connection: after any maintenance job, through the gate. */
  const hold = <T>(work: () => T): Promise<T> => maintenance.afterJobs(() => gate.hold(work));
  /** Tells the webhook sender (Store.onCommit) after each write transaction. */
  const committed = createCommitSignal();
  const afterCommit = <T>(result: T): T => (committed.notify(), result);
  // One transaction function for every write: better-sqlite3 builds four per `transaction()`.
  const inTransaction = db.transaction((work: () => unknown) => work());
  /** `work` in one `BEGIN IMMEDIATE` transaction (a savepoint inside one already open). */
  const immediate = <T>(work: () => T): T => inTransaction.immediate(work) as T;
  /** One `BEGIN IMMEDIATE` transaction through the gate, timed under `kind`. */
  const write = <T>(kind: WriteKind, work: () => T): Promise<T> =>
    maintenance.afterJobs(() =>
      afterCommit(timed(metrics, kind, () => gate.hold(() => immediate(work)))),
    );
  const maxLogId = db.prepare("SELECT COALESCE(MAX(id), 0) FROM logs").pluck();
  /** Where a bulk load's end runs (maintenance.ts): on the thread beside live writes, or once the store is large. */
  const onThread = (mode: ProcessMode | undefined) =>
    maintenanceOnThread(mode ?? "batch", maxLogId.get() as number);
  const readMeta = db.prepare("SELECT value FROM meta WHERE key = ?").pluck();
  // Prepared on first use (statementCache.ts): a read-only store never writes.
  const writeMeta = (key: string, value: string) =>
    hold(() =>
      statements
        .prepare(
          "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .run(key, value),
    );
  // Each order operation opens its own transaction (orders.ts).
  const timedOrders = <T>(work: () => T): Promise<T> =>
    maintenance.afterJobs(() => afterCommit(timed(metrics, "orders", () => gate.hold(work))));
  // Prepared on first use, as writeMeta: a read-only store may open a file older than the staging tables.
  let staged: ReturnType<typeof createStagedAttribution> | undefined;
  const stagedAttribution = () => (staged ??= createStagedAttribution(db));
  // Prepared on first use, as the staged attribution: a read-only store may open a file older than schema 14.
  let owedBlocks: ReturnType<typeof createSqliteOwedBlocks> | undefined;
  const owed = () => (owedBlocks ??= createSqliteOwedBlocks(db));
  let closed = false;
  let outbox: WebhookOutbox | undefined;
  const webhooks = () => (outbox ??= createSqliteWebhookOutbox(db, hold));

  return {
    backend: "sqlite",
    location: db.name,
    syncedRanges: async (token) => synced.list(token),
    checkpoint: async (token, startBlock) => synced.checkpoint(token, startBlock),
    // Ids only grow: the highest one counts the rows ever stored, cheaper than COUNT(*) and close enough.
    storedLogCount: async () => maxLogId.get() as number,
    sizeBytes: async () => fileSizes(db.name),
    openWindowWriter: ({ bulk, mode }) => {
      const writer = createWindowWriter(db, { chainId, onThread: bulk, mode, gate, checkpoints });
      return {
        ...writer,
        commit: (window, now) =>
          maintenance.afterJobs(() => writer.commit(window, now)).then(afterCommit),
      };
    },
    readerIndexes: {
      missing: async () => indexes.missing(),
      drop: async () => hold(() => indexes.drop()),
      async build(options = {}) {
        // One index per job, a turn of the event loop between them: live writes wait for one index, not for all of them.
        const built: string[] = [];
        while (options.signal?.aborted !== true) {
          const name = await maintenance.run("buildNextReaderIndex", {
            onThread: onThread(options.mode),
          });
          if (typeof name !== "string") break;
          built.push(name);
          // An index is pages, not changed rows: the store's look at its writes would not see it.
          checkpoints.nudge();
          await yieldToEventLoop();
        }
        lifecycle.readerIndexesBuilt();
        return built;
      },
    },

    stagedAttribution: {
      pending: async () => stagedAttribution().pending(),
      move: async (options = {}) => {
        const moved = afterCommit(
          await timed(metrics, "staged_attribution", () =>
            maintenance.run("moveStagedAttribution", { onThread: onThread(options.mode) }),
          ),
        );
        checkpoints.nudge();
        return moved as number;
      },
    },

    applyChainChange: async (change, now) =>
      write(change.kind, () => {
        if (change.endsAt !== undefined) chainEnd.cutSyncedAt(change.endsAt);
        return lifecycle.applyChainChange(change, now, synced);
      }),
    insertPreconfirmed: async (rows, now) =>
      write("preconfirmed", () => lifecycle.insertPreconfirmed(rows, now)),
    preconfirmedThrough: async (blockNumber) => lifecycle.preconfirmedThrough(blockNumber),
    finalizeThrough: async (blockNumber, now) =>
      write("finalize", () => lifecycle.finalizeThrough(blockNumber, now)),
    // The node says the block's rows were reorged out: the synced ranges end below it, so a kill
    // before the follower applies that reorg leaves the heights to be indexed again, not a gap.
    removeLog: async (log, now) =>
      write("removed_flag", () => {
        const changed = lifecycle.removeLog(log, now);
        if (changed > 0) chainEnd.cutSyncedAt(log.blockNumber - 1);
        return changed;
      }),
    unsettledBlocks: async () => lifecycle.unsettledBlocks(),
    liveBlocksAbove: async (blockNumber) => chainEnd.liveBlocksAbove(blockNumber),

    unattributed: async (txHashes) => attribution.unstored(txHashes),
    insertAttribution: async (transactions, now) =>
      write("attribution", () => attribution.insert(transactions, now)),
    owedAttribution: {
      count: async () => owed().count(),
      next: async (limit) => owed().next(limit),
      pay: async (blocks, packed) =>
        write("attribution", () => {
          const stored = attribution.insertPacked(packed);
          owed().clear(blocks);
          return stored;
        }),
    },
    saveRegistration: async (wallet, code, now) =>
      hold(() => registrations.save(wallet, code, now)),
    registration: async (wallet) => registrations.get(wallet),

    addOrder: async (order, now) => timedOrders(() => orders.add(order, now)),
    voidOrder: async (id, now) => timedOrders(() => orders.void(id, now)),
    expireOrders: async (now) => timedOrders(() => orders.expire(now)),
    getOrder: async (id) => orders.get(id),
    listOrders: async (filter) => orders.list(filter),
    listTransitions: async (orderId) => orders.transitions(orderId),
    voidedThenCapturedSince: async (afterId) => orders.voidedThenCapturedSince(afterId),
    captures: createSqliteCaptures(db, chainId, { orders, marks: nonceMarks }, (work) =>
      timedOrders(() => immediate(work)),
    ),
    cancels: createSqliteCancels(db, chainId, orders, (work) => timedOrders(() => immediate(work))),
    nonces: createSqliteNonceBook(db, chainId, nonceMarks, (work) =>
      timedOrders(() => immediate(work)),
    ),
    settlements: createSqliteSettlements(db, orders, (work) => timedOrders(() => immediate(work))),
    readMeta: async (key) => readMeta.get(key) as string | undefined,
    writeMeta: async (key, value) => void writeMeta(key, value),

    authorizationState: async (token, authorizer, nonce) =>
      authorizationState(token, authorizer, nonce),
    countRowsByStatus: async (token) => countSqliteRowsByStatus(statements, chainId, token),
    statusSnapshot: async (tokens, now) => {
      const outbox = webhooks();
      const snapshot = readSqliteStatusSnapshot(statements, synced, tokens, now);
      return {
        ...snapshot,
        webhooks: await outbox.backlog(),
        webhookAttempts: await outbox.lastAttempts(RECENT_WEBHOOK_ATTEMPTS),
      };
    },
    // Note: on the store's own connection (the main thread's): each outbox call is a short
    // transaction, and the bulk backfill commits on a thread with a connection of its own.
    // Prepared on first use, like writeMeta.
    get webhooks() {
      return webhooks();
    },

    onCommit: (listener) => committed.subscribe(listener),
    isClosed: () => closed,
    close: async () => {
      if (closed) return;
      closed = true;
      await maintenance.close();
      await checkpoints.close();
      db.close();
      deps.onClose?.();
    },
  };
}

/** The database file and its WAL, in bytes (an in-memory database or a file not created yet: 0). */
function fileSizes(path: string): number {
  let size = 0;
  for (const file of [path, `${path}-wal`]) {
    try {
      size += statSync(file).size;
    } catch {
      // Not created yet, or ":memory:".
    }
  }
  return size;
}
