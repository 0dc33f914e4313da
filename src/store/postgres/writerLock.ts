import { hostname } from "node:os";
import pg from "pg";
import { connectionConfig } from "./connection.js";
import { asPostgresError } from "./postgresErrors.js";
import type { WriterLock } from "../types.js";
import type { WriterHolder } from "../../rows/writerHolder.js";
import { WriterBusyError } from "../../errors/store.js";
import { WriterLockLostError } from "../../errors/writerLock.js";

/** The advisory lock key of a schema's one writer (hashed to the bigint Postgres locks on). */
const WRITER_LOCK = "flashindex:writer:";

export type PostgresWriterLock = WriterLock & {
  /** Throws WriterLockLostError (exit 75) once the lock's connection is gone: the lock went with it. */
  check: () => void;
};

/**
 * Takes the one-writer lock of a schema: `pg_try_advisory_lock` on a connection of its own, held
 * for as long as the process lives. Postgres releases it when that connection ends, kill -9 included.
 * A second writer gets WriterBusyError (exit 2) naming the first, as with a SQLite file.
 */
export async function acquirePostgresWriterLock(
  url: string,
  schema: string,
  location: string,
  command: string,
): Promise<PostgresWriterLock> {
  const holder: WriterHolder = {
    pid: process.pid,
    host: hostname(),
    command,
    startedAt: new Date().toISOString(),
  };
  const client = new pg.Client(connectionConfig(url, schema));
  let lost = false;
  let released = false;
  client.on("error", () => void (lost = true));
  client.on("end", () => void (lost = true));
  try {
    await client.connect();
    const { rows } = await client.query("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [
      WRITER_LOCK + schema,
    ]);
    if (rows[0].locked !== true) {
      const other = await client
        .query("SELECT value FROM meta WHERE key = 'writer'")
        .then((r) =>
          r.rows[0] === undefined ? undefined : (JSON.parse(r.rows[0].value) as WriterHolder),
        )
        .catch(() => undefined);
      throw new WriterBusyError(location, other, "database.schema");
    }
  } catch (error) {
    released = true;
    await client.end().catch(() => undefined);
    throw asPostgresError(error, location);
  }
  return {
    holder,
    release: () => {
      if (released) return;
      released = true;
      void client.end().catch(() => undefined);
    },
    check: () => {
      if (lost && !released) throw new WriterLockLostError(location);
    },
  };
}
