import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const MAIN = join(ROOT, "src", "cli", "main.ts");

/** Who runs the CLI: by default this process's user; `unprivileged()` gives a user file permissions apply to. */
export type CliUser = { uid?: number; gid?: number };

/**
 * A user that file permissions apply to: root ignores them, so under root the CLI runs as nobody
 * (65534); anyone else runs it as themselves. The files it reads must be readable by that user.
 */
export function unprivileged(): CliUser {
  return process.getuid?.() === 0 ? { uid: 65_534, gid: 65_534 } : {};
}

/** Spawns the real CLI (TypeScript through tsx) as a user would run it. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, user: CliUser = {}): ChildProcess & { output: () => { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    ...user,
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return Object.assign(child, { output: () => ({ stdout, stderr }) });
}

/** Runs the CLI to completion. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}, user: CliUser = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, env, user);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  return { code, ...child.output() };
}

/** Writes a config object to a JSON file and returns its path. */
export function writeConfig(dir: string, config: unknown, name = "config.json"): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}
