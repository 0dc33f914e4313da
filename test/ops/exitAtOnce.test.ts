import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, test } from "vitest";

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL");
});

/** A SQLite statement that runs for minutes on a worker thread (a count to 2,000,000,000). */
const LONG_STATEMENT =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) FROM c";

/**
 * A process with a SIGTERM listener (as the CLI's) and a worker thread inside one long SQLite
 * statement (as the maintenance thread in an index build); once the statement runs, it calls
 * exitAtOnce and reports what its "exit" listeners saw. (`process.exit` there waits for the
 * statement: minutes.)
 */
function processWithBusyThread(): Promise<{
  signal: NodeJS.Signals | null;
  ms: number;
  stdout: string;
}> {
  const sqlite = createRequire(import.meta.url).resolve("better-sqlite3");
  const exitModule = pathToFileURL(
    new URL("../../src/ops/exitAtOnce.ts", import.meta.url).pathname,
  ).href;
  const thread = [
    `const { default: Database } = await import(${JSON.stringify(pathToFileURL(sqlite).href)});`,
    `const { parentPort } = await import("node:worker_threads");`,
    `const db = new Database(":memory:");`,
    `parentPort.postMessage("running");`,
    `db.prepare(${JSON.stringify(LONG_STATEMENT)}).get();`,
  ].join("\n");
  const script = [
    `import { Worker } from "node:worker_threads";`,
    `const { exitAtOnce } = await import(${JSON.stringify(exitModule)});`,
    `process.on("SIGTERM", () => undefined);`,
    `process.on("exit", (code) => process.stdout.write("exit listener: " + code + "\\n"));`,
    `const worker = new Worker(${JSON.stringify(thread)}, { eval: true });`,
    `worker.once("message", () => setTimeout(() => exitAtOnce("SIGTERM"), 200));`,
  ].join("\n");
  const started = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  running.push(child);
  let stdout = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) =>
    child.once("exit", (_code, signal) =>
      resolve({ signal, ms: performance.now() - started, stdout }),
    ),
  );
}

describe("exitAtOnce()", () => {
  test.skipIf(process.platform === "win32")(
    "ends the process at once while a worker thread is inside a long SQLite statement, after its exit listeners, by the signal",
    async () => {
      const result = await processWithBusyThread();
      expect(result.signal).toBe("SIGTERM");
      expect(result.stdout).toContain("exit listener: 143");
      expect(result.ms).toBeLessThan(15_000);
    },
    30_000,
  );
});
