import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { anvilConfigFiles, runCli, spawnCli } from "../helpers/cli.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
/** Nothing listens here: the first endpoint fails and the client fails over, logging a warning. */
const DEAD_RPC = "http://127.0.0.1:9";
let anvil: Anvil;
let dir: string;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  dir = mkdtempSync(join(tmpdir(), "flashindex-streams-"));
}, 30_000);
afterAll(() => anvil?.stop());

const configFile = anvilConfigFiles(() => ({ dir, rpcUrl: anvil.httpUrl, token: USDC }));

/** Every non-empty line parses as JSON. */
function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Every key of a JSON value, nested ones included. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)]);
}

describe("results on stdout, logs on stderr, one JSON document under --json", () => {
  test("backfill and status --json print exactly one snake_case document on stdout while info logs and a failover warning go to stderr", async () => {
    const path = configFile("streams", {
      rpc: {
        http: [DEAD_RPC, anvil.httpUrl],
        retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
      },
    });
    const backfill = await runCli(["backfill", "--config", path, "--json"]);
    expect(backfill.code, backfill.stderr).toBe(0);
    const summary = JSON.parse(backfill.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({
      to_block: expect.any(Number),
      blocks: expect.any(Number),
      logs: 0,
    });
    expect(jsonLines(backfill.stderr).some((l) => l.level === "info")).toBe(true);

    const status = await runCli(["status", "--config", path, "--json"]);
    expect(status.code, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ chain_id: 8453, head: expect.any(Number), rpc_error: null });
    expect(keysOf(report).filter((k) => /[A-Z]/.test(k))).toEqual([]);
    expect(keysOf(report)).toEqual(
      expect.arrayContaining(["start_block", "lag_blocks", "synced_ranges"]),
    );
    // The config's info level is honoured (status no longer forces warn), on stderr.
    expect(jsonLines(status.stderr).some((l) => l.level === "warn" || l.level === "info")).toBe(
      true,
    );
  }, 60_000);

  test("FLASHINDEX_LOG_LEVEL and --log-level set the level of every command's logs", async () => {
    const path = configFile("levels", {
      rpc: {
        http: [DEAD_RPC, anvil.httpUrl],
        retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
      },
    });
    expect((await runCli(["backfill", "--config", path])).code).toBe(0);
    const quiet = await runCli(["status", "--config", path, "--json"], {
      FLASHINDEX_LOG_LEVEL: "error",
    });
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
    const flag = await runCli(["status", "--config", path, "--log-level", "silent"]);
    expect(flag.stderr).toBe("");
    expect(flag.stdout).toContain("chain 8453");
    for (const command of ["start", "backfill", "status", "auth", "order", "register", "cancel"]) {
      const help = await runCli([command, "--help"]);
      expect(help.stdout, command).toContain("--log-level");
    }
  }, 60_000);

  test("an error under --json is one JSON object on stdout with the same exit code, and nothing on stderr", async () => {
    const path = configFile("missing");
    const status = await runCli(["status", "--config", path, "--json"]);
    expect(status.code).toBe(2);
    expect(status.stderr).toBe("");
    expect(JSON.parse(status.stdout)).toEqual({
      error: {
        code: "config_error",
        message: expect.stringContaining(`${join(dir, "missing.db")} does not exist`),
      },
    });
    const usage = await runCli(["backfill", "--config", path, "--json", "--from", "x"]);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toEqual({
      error: { code: "usage_error", message: expect.stringContaining("--from") },
    });
    const plain = await runCli(["status", "--config", path]);
    expect(plain.stdout).toBe("");
    expect(plain.stderr).toMatch(/^flashindex: error: database\.path: /);
  }, 30_000);

  test("the daemon logs SIGTERM as JSON: every line it writes is a JSON object", async () => {
    const path = configFile("signal");
    const daemon = spawnCli(["start", "--config", path]);
    for (let i = 0; i < 200 && !daemon.output().stdout.includes('"msg":"Started flashindex"'); i++)
      await new Promise((r) => setTimeout(r, 100));
    daemon.kill("SIGTERM");
    const code = await new Promise<number | null>((resolve) => daemon.once("exit", resolve));
    expect(code).toBe(0);
    const { stdout, stderr } = daemon.output();
    expect(stderr).toBe("");
    const lines = jsonLines(stdout);
    expect(lines.find((l) => l.signal === "SIGTERM")).toMatchObject({
      level: "info",
      msg: "Received a signal, shutting down (send it again after 1 s to force)",
      repeat_window_ms: 1_000,
    });
    expect(lines.at(-1)).toMatchObject({ msg: "Stopped flashindex" });
  }, 60_000);
});
