import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const MAIN = join(ROOT, "src", "cli", "main.ts");

/** Spawns the real CLI (TypeScript through tsx) as a user would run it. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess & { output: () => { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return Object.assign(child, { output: () => ({ stdout, stderr }) });
}

/** Runs the CLI to completion. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, env);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  return { code, ...child.output() };
}

/** Writes a config object to a JSON file and returns its path. */
export function writeConfig(dir: string, config: unknown, name = "config.json"): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}
