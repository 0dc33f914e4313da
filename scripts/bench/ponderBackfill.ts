import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./freePort.js";
import { sampleProcessTree } from "./processTree.js";

/** What one Ponder run indexes: a chain's token from `startBlock` to `endBlock`, through `rpcUrl`. */
export type PonderTarget = {
  appDir: string;
  chainId: number;
  rpcUrl: string;
  token: string;
  startBlock: number;
  endBlock: number;
};

/** A finished Ponder run: rows stored, wall time from spawn to ready, and its process tree's figures. */
export type PonderFigures = {
  logs: number;
  durationMs: number;
  peakRssMb: number;
  cpuSeconds: number;
};

/**
 * Whether a line of Ponder's JSON log says its backfill is indexed and its indexes built: from then
 * on `GET /ready` answers 200. (`/health` is announced with the same message at start-up.)
 */
function isReadyLine(line: string): boolean {
  try {
    const entry = JSON.parse(line) as { msg?: unknown; endpoint?: unknown };
    return entry.msg === "Started returning 200 responses" && entry.endpoint === "/ready";
  } catch {
    return false;
  }
}
/** How long a run may take before the bench gives up on it (ms): Ponder retries a failing RPC for ever. */
const PONDER_TIMEOUT_MS = Number(process.env.BENCH_PONDER_TIMEOUT_S ?? 1_800) * 1_000;
/** How long Ponder may take to shut down after SIGTERM before its tree is killed (its own grace is 5 s). */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Runs `ponder start` (the app preparePonderApp installed, its default database: PGlite in a fresh
 * `.ponder/`) against `target` and times it from spawn to Ponder's ready line, which it writes once
 * every block to `endBlock` is indexed and its indexes are built. Then counts the rows through the
 * app's own API (Ponder's reader), stops Ponder with SIGTERM and returns the figures; peak RSS and
 * CPU are the whole process tree's. The chain must be `finality + 1` blocks past `endBlock` (Ponder
 * backfills to the finalized block and leaves the rest to its realtime sync).
 * Throws with Ponder's last log lines when it exits early or takes longer than PONDER_TIMEOUT_MS.
 */
export async function runPonderBackfill(target: PonderTarget): Promise<PonderFigures> {
  // A fresh database and RPC cache every run: Ponder caches every answer in its ponder_sync schema.
  rmSync(join(target.appDir, ".ponder"), { recursive: true, force: true });
  const port = await freePort();
  const { DATABASE_URL: _url, DATABASE_SCHEMA: _schema, ...inherited } = process.env;
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(target.appDir, "node_modules", "ponder", "dist", "esm", "bin", "ponder.js"),
      "start",
      "--log-format",
      "json",
      "--hostname",
      "127.0.0.1",
      "--port",
      String(port),
      "--schema",
      "bench",
    ],
    {
      cwd: target.appDir,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...inherited,
        PONDER_TELEMETRY_DISABLED: "true",
        BENCH_CHAIN_ID: String(target.chainId),
        BENCH_RPC_URL: target.rpcUrl,
        BENCH_TOKEN: target.token,
        BENCH_START_BLOCK: String(target.startBlock),
        BENCH_END_BLOCK: String(target.endBlock),
      },
    },
  );
  const sampler = sampleProcessTree(child.pid!);
  const tail: string[] = [];
  const remember = (line: string) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
  };
  let stderrRest = "";
  child.stderr.on("data", (chunk: Buffer) => {
    const lines = (stderrRest + chunk.toString()).split("\n");
    stderrRest = lines.pop() ?? "";
    lines.forEach(remember);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  try {
    let timer: NodeJS.Timeout | undefined;
    const durationMs = await new Promise<number>((resolve, reject) => {
      let rest = "";
      child.stdout.on("data", (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) {
          remember(line);
          if (isReadyLine(line)) resolve(performance.now() - started);
        }
      });
      timer = setTimeout(
        () => reject(new Error(`Ponder did not finish within ${PONDER_TIMEOUT_MS / 1_000} s`)),
        PONDER_TIMEOUT_MS,
      );
      void exited.then((code) =>
        reject(new Error(`ponder start exited ${code} before its ready line`)),
      );
    }).finally(() => clearTimeout(timer));
    const figures = sampler.stop();
    const answer = await fetch(`http://127.0.0.1:${port}/bench/transfers`);
    if (!answer.ok) throw new Error(`Ponder's /bench/transfers answered HTTP ${answer.status}`);
    const { rows } = (await answer.json()) as { rows: number };
    return { logs: Number(rows), durationMs, ...figures };
  } catch (error) {
    throw new Error(`${(error as Error).message}; Ponder's last lines:\n${tail.join("\n")}`, {
      cause: error,
    });
  } finally {
    sampler.stop();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), SHUTDOWN_GRACE_MS);
      await exited;
      clearTimeout(killer);
    }
  }
}
