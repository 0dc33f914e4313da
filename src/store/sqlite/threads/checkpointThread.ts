import { parentPort, workerData } from "node:worker_threads";
import { checkpointBeside, openCheckpointConnection } from "../openDatabase.js";

/** The checkpointer's thread: on each "checkpoint", copies the WAL back into the database (see checkpointer.ts). */
const { path } = workerData as { path: string };
const db = openCheckpointConnection(path);

parentPort!.on("message", (message: "checkpoint" | "close") => {
  if (message === "close") {
    db.close();
    parentPort!.close();
    return;
  }
  try {
    checkpointBeside(db);
  } catch {
    // A checkpoint that cannot run now runs on the next request; the WAL keeps every frame meanwhile.
  }
  parentPort!.postMessage("done");
});
