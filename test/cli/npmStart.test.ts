import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DEVNET_TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

/** Every live process whose parent chain leads to `root` (Linux /proc), root excluded. */
function descendants(root: number): number[] {
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `condition` came true within `timeoutMs` (the assertion then prints what was seen). */
const cameTrue = (condition: () => boolean, timeoutMs: number) => waitFor(condition, timeoutMs, "condition", 100).then(() => true, () => false);

describe("npm start", () => {
  test("SIGTERM to the npm process stops the daemon and its devnet's anvil, and the build step says what it does", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-npm-start-"));
    const config = writeConfig(dir, {
      chainId: 8453,
      devnet: { port: 0, paymentsPerSecond: 0, reorgEverySeconds: 0, dropEverySeconds: 0 },
      tokens: [{ address: DEVNET_TOKEN, startBlock: 0 }],
      finality: { depth: 2 },
      database: { path: join(dir, "devnet.db") },
      metrics: { enabled: false },
      logLevel: "info",
    });
    // As after a fresh clone or an edit: the build must run, and say so before the daemon's first line.
    rmSync(join(ROOT, "dist", ".build-stamp"), { force: true });
    const npm = spawn("npm", ["start", "--silent", "--", "--config", config], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    npm.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => npm.once("exit", (code, signal) => resolve(code ?? (signal === null ? null : 128 + 15))));
    let processes: number[] = [];
    try {
      expect(await cameTrue(() => output.includes('"msg":"Started flashindex"'), 90_000), output).toBe(true);
      processes = descendants(npm.pid!);
      const commands = processes.map((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " "));
      expect(commands.some((c) => c.includes("dist/src/cli/main.js start")), commands.join("\n")).toBe(true);
      expect(commands.some((c) => c.includes("anvil")), commands.join("\n")).toBe(true);
      npm.kill("SIGTERM");
      await exited;
      expect(await cameTrue(() => processes.every((pid) => !isAlive(pid)), 20_000), `still running: ${processes.filter(isAlive).join(", ")}`).toBe(true);
      expect(output).toContain('"msg":"Stopped flashindex"');
      expect(output).toMatch(/^flashindex: (building|sources changed).*\nflashindex: built dist\/ in [\d.]+ s\n/);
    } finally {
      for (const pid of [...processes, npm.pid!].filter(isAlive)) process.kill(pid, "SIGKILL");
    }
  }, 150_000);
});
