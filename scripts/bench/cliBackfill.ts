import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";

/** The `flashindex` bin itself, run through its shebang as a user's shell runs it: no Node flags added. */
export const CLI = join(import.meta.dirname, "..", "..", "src", "cli", "main.js");
/** Clock ticks a second in /proc/PID/stat (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** A running process's CPU seconds so far (user and system, all threads), from /proc. */
export function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/**
 * How the bin starts Node in its shebang (`#!/usr/bin/env -S NAME=value node --flag ...`): the
 * environment it sets and Node's flags. The bench's in-process measurements of the daemon's paths
 * (latency, rollback) run with them too, so they see the heap and the allocator the daemon has.
 */
export function cliLaunch(): { env: Record<string, string>; nodeFlags: string[] } {
  const shebang = readFileSync(CLI, "utf8").split("\n", 1)[0]!;
  const words = shebang
    .replace(/^#!\S+\s+(-S\s+)?/, "")
    .split(/\s+/)
    .filter((word) => word !== "");
  const env: Record<string, string> = {};
  while (/^[A-Z_][A-Z0-9_]*=/.test(words[0] ?? "")) {
    const [name, ...value] = words.shift()!.split("=");
    env[name!] = value.join("=");
  }
  if (!/(^|\/)node$/.test(words[0] ?? ""))
    throw new Error(`${CLI} does not start node in its first line: ${shebang}`);
  return { env, nodeFlags: words.slice(1) };
}

export type ProcessFigures = {
  logs: number;
  durationMs: number;
  peakRssMb: number;
  cpuSeconds: number;
  /** When the log line `options.markMsg` reached stderr, ms after the spawn (undefined: it never did). */
  markedMs?: number | undefined;
};

/**
 * Runs `flashindex backfill` in its own process exactly as a user would (config file, no flags to
 * Node) and measures the whole process: wall time from spawn to exit, peak RSS (the kernel's high
 * water mark) and CPU seconds, read from /proc while it runs. `logs` is counted in the database after.
 */
export async function runCliBackfill(
  dir: string,
  config: Record<string, unknown>,
  range: { from?: number; to: number },
  /** Counts the stored logs when the database is not the config's SQLite file (Postgres). */
  countLogs?: () => Promise<number>,
  /**
   * `markMsg`: a log line's msg whose time to note (the config's logLevel must let it through);
   * `stderrPath`: where to keep the process's log once it exits.
   */
  options: { markMsg?: string; stderrPath?: string } = {},
): Promise<ProcessFigures> {
  const configPath = join(dir, "bench.config.json");
  writeFileSync(configPath, JSON.stringify(config));
  const args = [
    "backfill",
    "--config",
    configPath,
    "--to",
    String(range.to),
    ...(range.from === undefined ? [] : ["--from", String(range.from)]),
  ];
  const started = performance.now();
  const child = spawn(CLI, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let markedMs: number | undefined;
  const mark =
    options.markMsg === undefined ? undefined : `"msg":${JSON.stringify(options.markMsg)}`;
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    if (mark !== undefined && markedMs === undefined && stderr.includes(mark))
      markedMs = performance.now() - started;
  });
  let peakKb = 0;
  let cpuSeconds = 0;
  const sample = () => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
      cpuSeconds = processCpuSeconds(child.pid!);
    } catch {
      // The process has just exited.
    }
  };
  const sampler = setInterval(sample, 20);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  const durationMs = performance.now() - started;
  clearInterval(sampler);
  if (options.stderrPath !== undefined) writeFileSync(options.stderrPath, stderr);
  if (code !== 0) throw new Error(`flashindex backfill exited ${code}: ${stderr.slice(-2_000)}`);
  let logs: number;
  if (countLogs !== undefined) logs = await countLogs();
  else {
    const db = new DatabaseConstructor(String((config.database as { path: string }).path), {
      readonly: true,
    });
    logs = db.prepare("SELECT COUNT(*) FROM logs").pluck().get() as number;
    db.close();
  }
  return { logs, durationMs, peakRssMb: Math.round(peakKb / 1024), cpuSeconds, markedMs };
}
