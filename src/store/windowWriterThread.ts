import { parentPort, workerData } from "node:worker_threads";
import { openWriterConnection } from "./openDatabase.js";
import { createWindowCommit, type PackedWindow } from "./windowCommit.js";

/** The window writer's thread: its own connection to the database, committing windows one at a time, in arrival order. */
export type WindowRequest = { id: number; window: PackedWindow; now: number };
export type WindowReply = { id: number; counts?: unknown; error?: string };

const { path, chainId } = workerData as { path: string; chainId: number };
const db = openWriterConnection(path);
const commit = createWindowCommit(db, chainId);

parentPort!.on("message", (message: WindowRequest | "close") => {
  if (message === "close") {
    db.close();
    parentPort!.close();
    return;
  }
  try {
    parentPort!.postMessage({ id: message.id, counts: commit(message.window, message.now) } satisfies WindowReply);
  } catch (error) {
    parentPort!.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) } satisfies WindowReply);
  }
});
