import DatabaseConstructor from "better-sqlite3";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_PRIVATE_KEYS, startAnvil } from "../../src/devnet/anvil.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { runCli, writeConfig } from "../helpers/cli.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
let anvil: Awaited<ReturnType<typeof startAnvil>>;
let dir: string;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  dir = mkdtempSync(join(tmpdir(), "flashindex-cli-"));
});
afterAll(() => anvil?.stop());

const config = (overrides: Record<string, unknown> = {}) => ({
  chainId: 8453,
  rpc: { http: [anvil.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
  tokens: [{ address: USDC, startBlock: 0 }],
  finality: { depth: 0 },
  database: { path: join(dir, `${Math.random()}.db`) },
  metrics: { enabled: false },
  ...overrides,
});

describe("flashindex CLI", () => {
  test("--help prints usage and exits 0; an unknown command exits 2", async () => {
    const help = await runCli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: flashindex <command>");
    const backfillHelp = await runCli(["backfill", "--help"]);
    expect(backfillHelp.stdout).toContain("--from <N>");
    const unknown = await runCli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });

  test.each([
    ["an unknown key", { windowSize: 10 }, "windowSize: unknown key"],
    [
      "a window over 1,999",
      { backfill: { windowBlocks: 5_000 } },
      "backfill.windowBlocks: must be at most 1999",
    ],
    [
      "a bad checksum",
      { tokens: [{ address: USDC.replace("fCD", "fcD"), startBlock: 0 }] },
      "tokens[0].address: bad EIP-55 checksum",
    ],
    [
      "a chain id the RPC does not serve",
      { chainId: 84532 },
      "serves chain 8453, but the config says chainId 84532",
    ],
    [
      "a start block above the head",
      { tokens: [{ address: USDC, startBlock: 99_999_999 }] },
      "tokens[0].startBlock: 99999999 is above the chain head",
    ],
  ])(
    "exits 2 with one line naming the field for %s, before writing anything",
    async (_name, overrides, message) => {
      const cfg = config(overrides);
      const path = writeConfig(dir, cfg, `${Math.random()}.json`);
      const result = await runCli(["backfill", "--config", path]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).not.toMatch(/\bat .*\.ts:\d+/);
      expect(existsSync(cfg.database.path)).toBe(false);
    },
  );

  test("bad flags are usage errors (exit 2)", async () => {
    const path = writeConfig(dir, config(), "flags.json");
    expect((await runCli(["backfill", "--config", path, "--from", "-5"])).code).toBe(2);
    expect((await runCli(["backfill", "--config", path, "--from", "10", "--to", "5"])).code).toBe(
      2,
    );
    expect((await runCli(["backfill", "--config", path, "--bogus"])).code).toBe(2);
    expect((await runCli(["backfill", "--config", join(dir, "missing.json")])).stderr).toContain(
      "does not exist",
    );
  });

  test("an unreachable RPC is a temporary failure (exit 75) and the URL's key is not printed", async () => {
    const path = writeConfig(
      dir,
      config({
        rpc: {
          http: ["http://127.0.0.1:9/v2/SECRETKEY"],
          retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
        },
      }),
      "down.json",
    );
    const result = await runCli(["backfill", "--config", path]);
    expect(result.code).toBe(75);
    expect(result.stderr + result.stdout).not.toContain("SECRETKEY");
  });

  test("status reports the real checkpoint, head, lag, synced range and row counts after a backfill", async () => {
    const buyers = ANVIL_PRIVATE_KEYS.slice(1, 4).map((key) => privateKeyToAccount(key).address);
    const token = await deployTestToken({
      rpcUrl: anvil.httpUrl,
      privateKey: ANVIL_PRIVATE_KEYS[0],
      mint: buyers.map((to) => ({ to, amount: 1_000n })),
    });
    const rpc = async (method: string, params: unknown[] = []) =>
      (
        (await (
          await fetch(anvil.httpUrl, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
          })
        ).json()) as { result: string }
      ).result;
    await rpc("anvil_mine", ["0x2"]);
    const head = Number(await rpc("eth_blockNumber"));
    const database = { path: join(dir, "status.db") };
    const path = writeConfig(
      dir,
      config({ tokens: [{ address: token.address, startBlock: token.blockNumber }], database }),
      "status.json",
    );
    const backfill = await runCli(["backfill", "--config", path]);
    expect(backfill.code, backfill.stderr).toBe(0);
    // `backfill` into an empty file is a bulk load: its attribution is staged, then moved into place.
    expect(backfill.stdout + backfill.stderr).toContain(
      '"msg":"Moved staged attribution into place"',
    );
    const db = new DatabaseConstructor(database.path, { readonly: true });
    expect(
      db
        .prepare(
          "SELECT (SELECT COUNT(*) FROM transactions) - (SELECT COUNT(DISTINCT tx_hash) FROM logs)",
        )
        .pluck()
        .get(),
    ).toBe(0);
    expect(db.prepare("SELECT COUNT(*) FROM staged_transactions").pluck().get()).toBe(0);
    db.close();
    const status = await runCli(["status", "--config", path, "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      chain_id: 8453,
      head,
      finalized: head,
      rpc_error: null,
      tokens: [
        {
          token: token.address,
          start_block: token.blockNumber,
          checkpoint: head,
          lag_blocks: 0,
          synced_ranges: [{ from: token.blockNumber, to: head }],
          rows: [{ status: "finalized", transfers: 3, authorizations: 0 }],
        },
      ],
    });
  });
});

describe("flashindex devnet", () => {
  test("prints its URLs and test token, serves JSON-RPC, and leaves no anvil behind on SIGINT", async () => {
    const { spawnCli } = await import("../helpers/cli.js");
    const child = spawnCli([
      "devnet",
      "--port",
      "0",
      "--block-time-ms",
      "0",
      "--flashblock-ms",
      "0",
    ]);
    const deadline = Date.now() + 20_000;
    while (!child.output().stdout.includes("funded keys") && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const out = child.output().stdout;
    expect(out).toContain("0x5FbDB2315678afecb367f032d93F642f64180aa3");
    const url = /HTTP JSON-RPC\s+(\S+)/.exec(out)?.[1];
    expect(url).toBeDefined();
    const answer = await fetch(url!, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
    });
    expect(((await answer.json()) as { result: string }).result).toBe("0x2105");
    child.kill("SIGINT");
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(0);
    await expect(fetch(url!, { method: "POST", body: "{}" })).rejects.toThrow();
  });
});
