import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config/loadConfig.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";

/** A port free right now (the devnet binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the command line says what the parser does", () => {
  test("start --help names the config keys that exist (rpc.ws, not realtime.ws)", async () => {
    const help = await runCli(["start", "--help"]);
    expect(help.stdout).toContain("newHeads over rpc.ws");
    expect(help.stdout).not.toContain("realtime.ws");
  });

  test("every command's help fits in 100 columns, usage lines included, and options wrap under their column", async () => {
    for (const command of [
      "start",
      "backfill",
      "status",
      "auth",
      "order",
      "cancel",
      "register",
      "webhooks",
      "devnet",
    ]) {
      const help = await runCli([command, "--help"]);
      const long = help.stdout.split("\n").filter((line) => [...line].length > 100);
      expect(long, command).toEqual([]);
    }
    const cancel = (await runCli(["cancel", "--help"])).stdout;
    expect(cancel).toMatch(/--log-level <LEVEL> +trace, debug.*\n {10,}\S/);
    // The long usage continues under its first flag.
    expect(cancel).toMatch(/^Usage: flashindex cancel --authorizer A .*\n {25}\(--signature /);
  });

  test("bad flags get one line in flashindex's words, never Node's parser messages", async () => {
    const cases: Array<[string[], string]> = [
      [
        ["backfill", "--from", "-5"],
        'flashindex: error: --from: expected a block number (a whole number of 0 or more), got "-5"',
      ],
      [
        ["backfill", "--fro", "5"],
        "flashindex: error: backfill: unknown option --fro (did you mean --from?) (see flashindex backfill --help)",
      ],
      [
        ["backfill", "--frobnicate"],
        "flashindex: error: backfill: unknown option --frobnicate (see flashindex backfill --help)",
      ],
      [
        ["status", "--json=yes"],
        "flashindex: error: status: --json takes no value (see flashindex status --help)",
      ],
      [
        ["backfill", "--to"],
        "flashindex: error: backfill: --to: missing value (see flashindex backfill --help)",
      ],
      [
        ["backfill", "stray"],
        'flashindex: error: backfill: unexpected argument "stray" (see flashindex backfill --help)',
      ],
    ];
    for (const [args, line] of cases) {
      const result = await runCli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr.trim()).toBe(line);
    }
  }, 30_000);

  test("devnet takes --config (its devnet section) and --log-level like every command, and says why --db does not apply", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-devnet-flags-"));
    const port = await freePort();
    const config = writeConfig(dir, {
      chainId: 8453,
      devnet: { port, paymentsPerSecond: 0, blockTimeMs: 500 },
      tokens: [{ address: "0x5FbDB2315678afecb367f032d93F642f64180aa3", startBlock: 0 }],
      logLevel: "info",
    });
    const devnet = spawnCli(["devnet", "--config", config, "--log-level", "warn"]);
    try {
      for (let i = 0; i < 300 && !devnet.output().stdout.includes("funded keys"); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(devnet.output().stdout).toContain(`HTTP JSON-RPC  http://127.0.0.1:${port}`);
    } finally {
      devnet.kill("SIGTERM");
    }
    expect(await new Promise((resolve) => devnet.once("exit", resolve))).toBe(0);
    const db = await runCli(["devnet", "--db", join(dir, "x.db")]);
    expect(db.code).toBe(2);
    expect(db.stderr.trim()).toBe(
      "flashindex: error: devnet: --db does not apply: the standalone devnet keeps no database and starts a new chain every run (see flashindex devnet --help)",
    );
    const level = await runCli(["devnet", "--log-level", "loud"]);
    expect(level.code).toBe(2);
    expect(level.stderr).toContain(
      "--log-level: expected one of trace, debug, info, warn, error, fatal, silent",
    );
  }, 60_000);

  test("devnet --write-config writes a ready config for a separate daemon (valid, pointing at the devnet), and never overwrites a file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-devnet-config-"));
    const path = join(dir, "ready.json");
    const devnet = spawnCli(["devnet", "--port", "0", "--write-config", path]);
    try {
      await waitFor(
        () => devnet.output().stdout.includes("Wrote a config"),
        30_000,
        "the devnet",
        50,
      );
      const url = /HTTP JSON-RPC {2}(\S+)/.exec(devnet.output().stdout)?.[1];
      const config = loadConfig(path, {}, {});
      expect(config.rpc.http).toEqual([url]);
      expect(config.tokens[0]?.address).toBe("0x5FbDB2315678afecb367f032d93F642f64180aa3");
      expect(config.registration.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const status = await runCli([
        "backfill",
        "--config",
        path,
        "--db",
        join(dir, "standalone.db"),
        "--json",
      ]);
      expect(status.code, status.stderr).toBe(0);
    } finally {
      devnet.kill("SIGTERM");
    }
    expect(await new Promise((resolve) => devnet.once("exit", resolve))).toBe(0);
    const again = await runCli(["devnet", "--port", "0", "--write-config", path]);
    expect(again.code).toBe(2);
    expect(again.stderr.trim()).toBe(
      `flashindex: error: --write-config: ${path} already exists: name a new file (nothing was overwritten)`,
    );
  }, 60_000);
});
