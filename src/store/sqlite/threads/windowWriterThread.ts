import { parentPort, workerData } from "node:worker_threads";
import { serveThreadMessages } from "../../../ops/threadEntry.js";
import { niceThisThread } from "../../../ops/threadNice.js";
import { openWriterConnection, resetWalWhenLarge } from "../openDatabase.js";
import { createWindowCommit } from "../windowCommit.js";
import { createWindowGate, type WriteGateMemory } from "../writeGate.js";
import type { WindowWrite } from "../../types.js";

/** The window writer's thread: its own connection to the database, committing windows one at a time, in arrival order. */
export type WindowRequest = { id: number; window: WindowWrite; now: number };
export type WindowReply = { id: number; counts?: unknown; error?: string };
export type WindowWriterData = {
  path: string;
  chainId: number;
  gate: WriteGateMemory;
  nice: number;
};

const { path, chainId, gate, nice } = workerData as WindowWriterData;
niceThisThread(nice);
const db = openWriterConnection(path);
const commit = createWindowCommit(db, chainId, createWindowGate(gate));

serveThreadMessages<WindowRequest>(
  (message) => {
    try {
      parentPort!.postMessage({
        id: message.id,
        counts: commit(message.window, message.now),
      } satisfies WindowReply);
    } catch (error) {
      parentPort!.postMessage({
        id: message.id,
        error: error instanceof Error ? error.message : String(error),
      } satisfies WindowReply);
      return;
    }
    try {
      // After the reply (the window is committed; the main thread now nudges the checkpointer).
      resetWalWhenLarge(db);
    } catch {
      // A reset that cannot run now (another checkpoint under way) runs after the next window; nothing is lost.
    }
  },
  () => db.close(),
);
