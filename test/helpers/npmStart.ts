import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./fixtures.js";

const ROOT = join(import.meta.dirname, "..", "..");

/** The bundled devnet's test token: the first contract of anvil's first key, the same on every run. */
export const DEVNET_TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

export type NpmStart = ChildProcess & {
  /** stdout and stderr of npm and the daemon, interleaved as they came. */
  output: () => string;
  /** npm's exit code, or 128 + the signal's number when a signal ended it. */
  exited: Promise<number>;
};

/**
 * Runs `npm start -- --config <config>` as a terminal would: in a process group of its own (its
 * pid is the group id), so a test can signal the whole group as Ctrl-C or `kill -- -PGID` does.
 */
export function spawnNpmStart(configPath: string): NpmStart {
  const npm = spawn("npm", ["start", "--silent", "--", "--config", configPath], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  npm.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number>((resolve) =>
    npm.once("exit", (code, signal) =>
      resolve(code ?? 128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 9)),
    ),
  );
  return Object.assign(npm, { output: () => output, exited });
}

/** Whether `condition` came true within `timeoutMs` (the assertion then prints what was seen). */
export const cameTrue = (condition: () => boolean, timeoutMs: number) =>
  waitFor(condition, timeoutMs, "condition", 100).then(
    () => true,
    () => false,
  );

/** Every live process whose parent chain leads to `root` (Linux /proc), root excluded. */
export function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/PID/stat is the parent pid; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const next = [...parents].filter(([, ppid]) => frontier.includes(ppid)).map(([pid]) => pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** The command line of `pid`, its arguments separated by spaces ("" once it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILLs whatever of `pids` still runs (a test's clean-up after a failure). */
export function killLeftovers(pids: readonly number[]): void {
  for (const pid of pids.filter(isAlive)) process.kill(pid, "SIGKILL");
}
