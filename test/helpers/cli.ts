import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
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
export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  user: CliUser = {},
): ChildProcess & { output: () => { stdout: string; stderr: string } } {
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
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  user: CliUser = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

/**
 * Writes `<name>.json` in `dir`: a config for an anvil at `rpcUrl` (Base's chain id, one token from
 * block 0, finality depth 0, no pending polling, no metrics server, fast retries), with `overrides`
 * on top, and its database at `<dir>/<name>.db`.
 */
export function anvilConfigFile(
  dir: string,
  name: string,
  rpcUrl: string,
  token: string,
  overrides: Record<string, unknown> = {},
): string {
  return writeConfig(
    dir,
    {
      chainId: 8453,
      rpc: { http: [rpcUrl], retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
      tokens: [{ address: token, startBlock: 0 }],
      finality: { depth: 0 },
      realtime: { headPollIntervalMs: 200, pendingPollIntervalMs: 0 },
      database: { path: anvilDatabasePath(dir, name) },
      metrics: { enabled: false },
      logLevel: "info",
      ...overrides,
    },
    `${name}.json`,
  );
}

/** Where anvilConfigFile puts the database of config `name`. */
export const anvilDatabasePath = (dir: string, name: string): string => join(dir, `${name}.db`);

/**
 * A test file's anvilConfigFile: its directory and anvil are read when a file is written (a
 * beforeAll sets them), `defaults` go under each call's overrides, and `fileMode` is set on the file
 * written (a config another user reads).
 */
export function anvilConfigFiles(
  where: () => { dir: string; rpcUrl: string; token: string },
  options: { defaults?: Record<string, unknown>; fileMode?: number } = {},
) {
  return (name: string, overrides: Record<string, unknown> = {}): string => {
    const { dir, rpcUrl, token } = where();
    const path = anvilConfigFile(dir, name, rpcUrl, token, { ...options.defaults, ...overrides });
    if (options.fileMode !== undefined) chmodSync(path, options.fileMode);
    return path;
  };
}
