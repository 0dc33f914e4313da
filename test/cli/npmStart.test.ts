import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { writeConfig } from "../helpers/cli.js";
import {
  cameTrue,
  commandLine,
  descendants,
  DEVNET_TOKEN,
  isAlive,
  killLeftovers,
  spawnNpmStart,
} from "../helpers/npmStart.js";

const ROOT = join(import.meta.dirname, "..", "..");

/** A devnet config with no demo traffic, its database in a new directory. */
function devnetConfig(prefix: string): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const config = writeConfig(dir, {
    chainId: 8453,
    devnet: { port: 0, paymentsPerSecond: 0, reorgEverySeconds: 0, dropEverySeconds: 0 },
    tokens: [{ address: DEVNET_TOKEN, startBlock: 0 }],
    finality: { depth: 2 },
    database: { path: join(dir, "devnet.db") },
    metrics: { enabled: false },
    logLevel: "info",
  });
  return { dir, config };
}

describe("npm start", () => {
  test("SIGTERM to the npm process stops the daemon and its devnet's anvil, and the build step says what it does", async () => {
    const { config } = devnetConfig("flashindex-npm-start-");
    // As after a fresh clone or an edit: the build must run, and say so before the daemon's first line.
    rmSync(join(ROOT, "dist", ".build-stamp"), { force: true });
    const npm = spawnNpmStart(config);
    let processes: number[] = [];
    try {
      expect(
        await cameTrue(() => npm.output().includes('"msg":"Started flashindex"'), 90_000),
        npm.output(),
      ).toBe(true);
      processes = descendants(npm.pid!);
      const commands = processes.map(commandLine);
      expect(
        commands.some((c) => c.includes("dist/src/cli/main.js start")),
        commands.join("\n"),
      ).toBe(true);
      expect(
        commands.some((c) => c.includes("anvil")),
        commands.join("\n"),
      ).toBe(true);
      npm.kill("SIGTERM");
      await npm.exited;
      expect(
        await cameTrue(() => processes.every((pid) => !isAlive(pid)), 20_000),
        `still running: ${processes.filter(isAlive).join(", ")}`,
      ).toBe(true);
      expect(npm.output()).toContain('"msg":"Stopped flashindex"');
      expect(npm.output()).toMatch(
        /^flashindex: (building|sources changed).*\nflashindex: built dist\/ in [\d.]+ s\n/,
      );
    } finally {
      killLeftovers([...processes, npm.pid!]);
    }
  }, 150_000);

  // A terminal's Ctrl-C signals the whole foreground process group, and so do `kill -- -PGID` and
  // systemd's default KillMode=control-group: npm and the daemon each get the signal, and npm
  // forwards its own copy to the daemon. That is one stop request, not a second one that forces.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`${signal} to npm start's process group is one graceful stop: the daemon stops, saves the devnet's chain, exits 0`, async () => {
      const { dir, config } = devnetConfig(`flashindex-npm-${signal.toLowerCase()}-`);
      const npm = spawnNpmStart(config);
      let processes: number[] = [];
      try {
        expect(
          await cameTrue(() => npm.output().includes('"msg":"Started flashindex"'), 90_000),
          npm.output(),
        ).toBe(true);
        processes = descendants(npm.pid!);
        rmSync(join(dir, "devnet.anvil-state.json"), { force: true });
        process.kill(-npm.pid!, signal);
        const code = await npm.exited;
        expect([0, signal === "SIGINT" ? 130 : 143], npm.output()).toContain(code);
        const output = npm.output();
        expect(output).toContain(
          '"msg":"Received a signal, shutting down (send it again after 1 s to force)"',
        );
        expect(output).toContain('"msg":"Stopped flashindex"');
        expect(output).not.toContain("exited at once");
        expect(output).not.toContain('"level":50');
        expect(
          await cameTrue(() => processes.every((pid) => !isAlive(pid)), 20_000),
          `still running: ${processes.filter(isAlive).join(", ")}`,
        ).toBe(true);
        // Deleted just before the signal: anvil wrote its chain again on the way out.
        expect(existsSync(join(dir, "devnet.anvil-state.json"))).toBe(true);
      } finally {
        killLeftovers([...processes, npm.pid!]);
      }
    }, 150_000);
  }
});
