import type { WindowWriter } from "../store.js";
import { createPostgresOwedBlocks } from "./owedAttribution.js";
import { insertLogRows, insertPackedAttribution } from "./rowWriter.js";
import { createPostgresSyncedRanges } from "./syncedRanges.js";
import { copyWindow } from "./windowCopy.js";
import type { WriteQueue } from "./writeQueue.js";

/**
 * A backfill's window writer over Postgres (as SQLite's sqlite/threads/windowWriter.ts and
 * sqlite/windowCommit.ts): each window's rows, attribution, owed blocks and synced range in one
 * transaction, beside other windows (WriteQueue.writeWindow); close() waits for the windows in
 * flight.
 */
export function createPostgresWindowWriter(queue: WriteQueue, chainId: number): WindowWriter {
  const sent = new Set<Promise<unknown>>();
  return {
    commit(window, now) {
      const committed = queue.writeWindow(window.to, async (client) => {
        // Bulk COPY; a window holding an already stored log goes in by the statement that skips it.
        const counts =
          (await copyWindow(client, window.rows, now)) ??
          (await insertLogRows(client, window.rows, now));
        await insertPackedAttribution(client, window.attribution);
        const synced = createPostgresSyncedRanges(client, chainId);
        // What the window owes is recorded with its range: a window fetched again after a crash
        // owes it again.
        if (window.owed !== undefined)
          await createPostgresOwedBlocks(client).record(window.owed, now);
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
}
