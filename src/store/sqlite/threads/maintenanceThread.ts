import { parentPort, workerData } from "node:worker_threads";
import { serveThreadMessages } from "../../../ops/threadEntry.js";
import { maintenanceJobs, type MaintenanceReply, type MaintenanceRequest } from "./maintenance.js";
import { CACHE_SIZE_KIB, openWriterConnection } from "../openDatabase.js";

/** The maintenance thread (maintenance.ts): a bulk load's finishing work on a connection of its own, one job at a time. */
const { path } = workerData as { path: string };
// The main connection's cache: an index build sorted slower with the window writer's larger one.
const db = openWriterConnection(path, CACHE_SIZE_KIB);
/** Prepared with the first job, so a database that cannot run them says why in that job's reply. */
let run: ReturnType<typeof maintenanceJobs> | undefined;

serveThreadMessages<MaintenanceRequest>(
  (message) => {
    try {
      parentPort!.postMessage({
        id: message.id,
        result: (run ??= maintenanceJobs(db))(message.job),
      } satisfies MaintenanceReply);
    } catch (error) {
      parentPort!.postMessage({
        id: message.id,
        error: error instanceof Error ? error.message : String(error),
      } satisfies MaintenanceReply);
    }
  },
  () => db.close(),
);
