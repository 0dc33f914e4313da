#!/usr/bin/env node
// Fresh starts of `flashindex start` on the bundled devnet, each stopped by SIGTERM: the check that
// better-sqlite3 works under the Node running this script, from the daemon's worker threads too
// (issue 41: better-sqlite3 12 on Node 24 aborted in `Statement::~Statement()` on a worker thread,
// before storing a row, in 5 of 7 fresh starts here). Each run must store logs, stop with exit code 0
// and "Stopped flashindex", and have run on this script's own Node binary.
// Usage: node scripts/ci/devnetStarts.mjs [--runs N] [--seconds S]   (needs a built dist/)
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const ROOT = join(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "dist", "src", "cli", "main.js");
/** How long a daemon may take to say "Started flashindex" (anvil, contracts, migrations). */
const START_TIMEOUT_MS = 60_000;
/** How long a daemon may take to exit after SIGTERM. */
const STOP_TIMEOUT_MS = 30_000;

const { values } = parseArgs({
  options: { runs: { type: "string", default: "3" }, seconds: { type: "string", default: "8" } },
});
const runs = Number(values.runs);
const secondsRunning = Number(values.seconds);
const Database = createRequire(join(ROOT, "package.json"))("better-sqlite3");
const node = realpathSync(process.execPath);

console.log(`devnet starts: ${runs} fresh starts of ${secondsRunning} s each`);
console.log(`devnet starts: on Node ${process.version} (${node})`);
const outcomes = [];
for (let run = 1; run <= runs; run += 1) outcomes.push(await freshStart(run));
const failed = outcomes.filter((outcome) => !outcome.ok);
console.log(`devnet starts: ${outcomes.length - failed.length} passed, ${failed.length} failed`);
process.exit(failed.length === 0 ? 0 : 1);

/** One fresh start in a directory of its own: start, let it index, SIGTERM, count what it stored. */
async function freshStart(run) {
  const dir = mkdtempSync(join(tmpdir(), "flashindex-devnet-start-"));
  const database = join(dir, "devnet.db");
  const config = join(dir, "config.json");
  // The bundled config (demo payments, pre-confirmations, reorgs), without its fixed ports.
  const bundled = JSON.parse(readFileSync(join(ROOT, "indexer.config.json"), "utf8"));
  writeFileSync(
    config,
    JSON.stringify({
      ...bundled,
      $schema: undefined,
      devnet: { ...bundled.devnet, port: 0 },
      database: { path: database },
      metrics: { enabled: false },
      facilitator: { enabled: false },
    }),
  );
  // In a process group of its own, so that nothing it started (the devnet's anvil) outlives the run.
  const options = { stdio: ["ignore", "pipe", "pipe"], detached: true };
  const child = spawn(BIN, ["start", "--config", config], options);
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let ranOn = "";
  const spawnedAt = performance.now();
  const started = await Promise.race([
    until(() => output.includes('"msg":"Started flashindex"')).then(() => true),
    exited.then(() => false),
    sleep(START_TIMEOUT_MS).then(() => false),
  ]);
  const startSeconds = ((performance.now() - spawnedAt) / 1000).toFixed(1);
  if (started) {
    // The shebang's `env node` found the daemon's Node on PATH: it must be this script's.
    ranOn = readNodeOf(child.pid);
    await Promise.race([sleep(secondsRunning * 1000), exited]);
  }
  child.kill("SIGTERM");
  const stoppingAt = performance.now();
  const stop = await Promise.race([exited, sleep(STOP_TIMEOUT_MS).then(() => undefined)]);
  if (stop === undefined) child.kill("SIGKILL");
  const { code, signal } = stop ?? (await exited);
  const stopSeconds = ((performance.now() - stoppingAt) / 1000).toFixed(1);
  killGroup(child.pid);
  const logs = countLogs(database);
  const problems = [];
  if (!started) problems.push("never said Started flashindex");
  if (started && ranOn !== node)
    problems.push(`ran on ${ranOn || "an unknown binary"}, not ${node}`);
  if (signal !== null || code !== 0) problems.push(`exited with ${signal ?? `code ${code}`}`);
  if (!output.includes('"msg":"Stopped flashindex"'))
    problems.push("never said Stopped flashindex");
  if (logs === 0) problems.push("stored no logs");
  const ok = problems.length === 0;
  const summary = `started in ${startSeconds} s, ${logs} logs stored, exit ${signal ?? code} in ${stopSeconds} s`;
  console.log(
    `run ${run}: ${ok ? `ok: ${summary}` : `FAILED: ${summary}: ${problems.join("; ")}`}`,
  );
  if (!ok) console.log(output.split("\n").slice(-25).join("\n"));
  rmSync(dir, { recursive: true, force: true });
  return { ok, logs };
}

/** The real path of the executable process `pid` runs ("" once it is gone). */
function readNodeOf(pid) {
  try {
    return realpathSync(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return "";
  }
}

/** SIGKILL to what is left of process group `pid` (nothing, after a clean stop). */
function killGroup(pid) {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // The group is empty: everything stopped.
  }
}

/** Rows in `logs` of the database at `path` (0 when there is no database there). */
function countLogs(path) {
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT count(*) AS n FROM logs").get().n;
  } finally {
    db.close();
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

async function until(condition) {
  while (!condition()) await sleep(100);
}
