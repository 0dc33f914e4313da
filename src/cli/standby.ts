import type { ConfigSettings } from "../config/types.js";
import type { Logger } from "../ops/logger.js";
import type { Shutdown } from "../ops/shutdown.js";
import { withRetry } from "../ops/withRetry.js";
import { acquireStoreWriterLock } from "../store/openStore.js";
import { WriterBusyError } from "../errors/store.js";
import type { WriterLock } from "../store/types.js";

/**
 * How often a standby asks for the writer lock. Postgres frees the lock as soon as the writer's
 * connection ends (kill -9 included; a host gone takes the keepalive's minute or two), so a standby
 * takes over within this of the server noticing, plus its own catch-up.
 */
export const STANDBY_RETRY_MS = 1_000;

/**
 * `start --standby`: waits until the database's writer lock is free instead of exiting, then holds
 * it. Whatever the first writer committed stays; the standby resumes from it as any restart does.
 */
export async function waitForWriterLock(
  settings: ConfigSettings,
  logger: Logger,
  shutdown: Shutdown,
): Promise<WriterLock> {
  let waiting = false;
  const lock = await withRetry(() => acquireStoreWriterLock(settings, "start --standby"), {
    retryCount: Number.POSITIVE_INFINITY,
    delay: STANDBY_RETRY_MS,
    shouldRetry: ({ error }) => error instanceof WriterBusyError && !shutdown.isKilled(),
    onRetry: ({ error }) => {
      if (!waiting)
        logger.info({
          msg: "Waiting as a standby: another process writes the database",
          writer: (error as WriterBusyError).shortMessage,
        });
      waiting = true;
    },
    signal: shutdown.signal,
  });
  if (waiting) logger.info({ msg: "Took over as the writer" });
  return lock;
}
