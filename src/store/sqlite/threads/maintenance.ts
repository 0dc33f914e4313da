import { FatalError } from "../../../errors/base.js";
import { startThread } from "../../../ops/startThread.js";
import { createThreadCalls } from "../../../ops/threadCalls.js";
import { MAINTENANCE_THREAD_HEAP_MB } from "../../../ops/threadSettings.js";
import type { Database } from "../openDatabase.js";
import { createSqliteReaderIndexes } from "../readerIndexes.js";
import { createStagedAttribution } from "../stagedAttribution.js";
import type { LiveWriteGate } from "../writeGate.js";

/** A bulk load's finishing work: staged attribution's move, one reader index's build. */
export type MaintenanceJob = "moveStagedAttribution" | "buildNextReaderIndex";
export type MaintenanceRequest = { id: number; job: MaintenanceJob };
/** `result`: the transactions moved, or the index built (null when none was missing). */
export type MaintenanceReply = { id: number; result?: number | string | null; error?: string };

/** Runs a job on `db`: the thread's connection, or the store's own (no live work, or an in-memory database). */
export function maintenanceJobs(db: Database): (job: MaintenanceJob) => number | string | null {
  const indexes = createSqliteReaderIndexes(db);
  const staged = createStagedAttribution(db);
  return (job) => (job === "moveStagedAttribution" ? staged.move() : (indexes.buildNext() ?? null));
}

/**
 * Runs the end of a bulk load (seconds at a million logs, minutes at hundreds of millions: each job
 * is one statement under SQLite's write lock) beside live work (the daemon) on a thread of its own
 * with a connection of its own, so the main thread keeps serving `/healthz`, `/metrics`, the API
 * and the WebSocket subscriptions (their pings) meanwhile: on the main thread, a long build left a
 * supervisor's liveness probe unanswered, and a restart rolled the build back to start over.
 *
 * Writes wait: the window writer steps aside through the gate (holdWhile), and the store's own
 * writes run through `afterJobs`, without blocking the event loop. One job at a time; the thread
 * starts with the first job on it. In batch mode on a store under MAINTENANCE_THREAD_FROM_LOGS
 * (ops/threadSettings.ts maintenanceOnThread: `flashindex backfill`, where a thread's start only
 * added to the run's end) and for an in-memory
 * database (which cannot be shared with a thread), jobs run inline on the store's connection.
 */
export function createMaintenance(db: Database, gate: LiveWriteGate) {
  let running: Promise<unknown> | undefined;
  let thread: ReturnType<typeof startMaintenanceThread> | undefined;
  let inline: ReturnType<typeof maintenanceJobs> | undefined;
  /** Runs `work` once no job runs: checked in the same turn as `work` starts, so no job can start in between. */
  const afterJobs = async <T>(work: () => T | Promise<T>): Promise<T> => {
    while (running !== undefined) await running.catch(() => undefined);
    return work();
  };
  return {
    /** The store's own writes run through this before they take the gate. */
    afterJobs,
    /** Runs `job` after any running one, holding every other write back until it ends; on the thread `onThread` (ops/threadSettings.ts maintenanceOnThread). */
    run: (job: MaintenanceJob, options: { onThread: boolean }): Promise<number | string | null> =>
      afterJobs(async () => {
        if (!options.onThread || db.memory)
          return gate.hold(() => (inline ??= maintenanceJobs(db))(job));
        const work = gate.holdWhile(() => (thread ??= startMaintenanceThread(db.name)).run(job));
        running = work;
        try {
          return await work;
        } finally {
          running = undefined;
        }
      }),
    /** Waits for the running job, then stops the thread. */
    close: (): Promise<void> => afterJobs(async () => thread?.close()),
  };
}

function startMaintenanceThread(path: string) {
  const worker = startThread(
    import.meta.url,
    "maintenanceThread",
    { path },
    { maxOldGenerationSizeMb: MAINTENANCE_THREAD_HEAP_MB },
  );
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  const calls = createThreadCalls<MaintenanceReply, number | string | null>(worker, {
    thread: "maintenance thread",
    settle: (reply) =>
      reply.error !== undefined
        ? new FatalError(`Could not finish the bulk load: ${reply.error}`)
        : (reply.result ?? null),
  });
  return {
    run: (job: MaintenanceJob) =>
      calls.call((id) => worker.postMessage({ id, job } satisfies MaintenanceRequest)),
    async close(): Promise<void> {
      if (!calls.failed()) worker.postMessage("close");
      await exited;
    },
  };
}
