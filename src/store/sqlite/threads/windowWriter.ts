import { buffersToMove } from "../../../rows/packedRows.js";
import { FatalError } from "../../../errors/base.js";
import type { InsertCounts } from "../../types.js";
import { startThread } from "../../../ops/startThread.js";
import { createThreadCalls } from "../../../ops/threadCalls.js";
import {
  windowWriterNice,
  WRITER_THREAD_HEAP_MB,
  WRITER_THREAD_YOUNG_MB,
  type ProcessMode,
} from "../../../ops/threadSettings.js";
import type { Database } from "../openDatabase.js";
import type { WindowWriter } from "../../store.js";
import { createWindowCommit, windowFields } from "../windowCommit.js";
import type { WindowReply, WindowRequest, WindowWriterData } from "./windowWriterThread.js";
import type { WalCheckpoints } from "../walCheckpoints.js";
import type { LiveWriteGate } from "../writeGate.js";
import { attributionToMove } from "../../../rows/packedAttribution.js";

/**
 * Commits backfill windows on a thread of their own, with a second connection to the same file:
 * SQLite's inserts (about half of a backfill's CPU) then run on one core while the main thread
 * parses and decodes the next windows on the other. Commits are applied in the order they are sent.
 * A short backfill (not worth a thread) and an in-memory database (which cannot be shared) are
 * written on the main thread through the same commit function. The thread shares the main
 * connection's live-write gate (writeGate.ts), so live writes go first, and the store's checkpointer
 * (walCheckpoints.ts), which copies the WAL back after each window while the thread inserts the next.
 */
export function createWindowWriter(
  db: Database,
  options: {
    chainId: number;
    onThread: boolean;
    mode?: ProcessMode | undefined;
    gate: LiveWriteGate;
    checkpoints: Pick<WalCheckpoints, "nudge">;
  },
): WindowWriter {
  if (!options.onThread || db.memory) {
    const commit = createWindowCommit(db, options.chainId);
    return { commit: async (window, now) => commit(window, now), close: async () => undefined };
  }
  const data: WindowWriterData = {
    path: db.name,
    chainId: options.chainId,
    gate: options.gate.memory,
    nice: windowWriterNice(options.mode ?? "batch"),
  };
  const worker = startThread(import.meta.url, "windowWriterThread", data, {
    maxOldGenerationSizeMb: WRITER_THREAD_HEAP_MB,
    maxYoungGenerationSizeMb: WRITER_THREAD_YOUNG_MB,
  });
  const calls = createThreadCalls<WindowReply, InsertCounts>(worker, {
    thread: "window writer thread",
    // Each reply means a committed window (or a failed one): the checkpointer may copy the WAL back.
    onReply: () => options.checkpoints.nudge(),
    settle: (reply) =>
      reply.error !== undefined
        ? new FatalError(`Could not store a backfill window: ${reply.error}`)
        : (reply.counts as InsertCounts),
  });
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      // A thread that died inside a transaction must not leave live writes waiting for it.
      options.gate.windowWriterGone();
      resolve();
    }),
  );
  let closing: Promise<void> | undefined;
  const outstanding = new Set<Promise<InsertCounts>>();

  return {
    commit(window, now) {
      const committed = calls.call((id) => {
        // The rows' and the attribution's buffers move to the thread instead of being copied.
        const attribution = attributionToMove(window.attribution);
        const request = {
          id,
          window: { ...windowFields(window), attribution: attribution.packed },
          now,
        } satisfies WindowRequest;
        worker.postMessage(request, [...buffersToMove(window.rows), ...attribution.transfer]);
      });
      outstanding.add(committed);
      const forget = () => void outstanding.delete(committed);
      committed.then(forget, forget);
      return committed;
    },
    close() {
      closing ??= (async () => {
        await Promise.allSettled([...outstanding]);
        if (!calls.failed()) worker.postMessage("close");
        else await worker.terminate();
        await exited;
      })();
      return closing;
    },
  };
}
