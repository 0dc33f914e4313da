import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import {
  anvilConfigFiles,
  anvilDatabasePath,
  runCli,
  spawnCli,
  writeConfig,
} from "../helpers/cli.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
/** Genesis timestamps one day apart: two chains with the same id and different genesis hashes. */
const GENESIS_TIMESTAMP_S = 1_760_000_000;
let anvil: Anvil;
let otherAnvil: Anvil;
let dir: string;

beforeAll(async () => {
  [anvil, otherAnvil] = await Promise.all([
    startAnvil({ chainId: 8453, extraArgs: ["--timestamp", String(GENESIS_TIMESTAMP_S)] }),
    startAnvil({ chainId: 8453, extraArgs: ["--timestamp", String(GENESIS_TIMESTAMP_S + 86_400)] }),
  ]);
  await fetch(anvil.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"anvil_mine","params":["0x5"]}',
  });
  dir = mkdtempSync(join(tmpdir(), "flashindex-guards-"));
}, 30_000);
afterAll(async () => {
  await anvil?.stop();
  await otherAnvil?.stop();
});

const anvilConfig = anvilConfigFiles(() => ({ dir, rpcUrl: anvil.httpUrl, token: USDC }), {
  defaults: { logLevel: "warn" },
});
/** A config file `name` and its database's path. */
const configFile = (name: string) => ({
  path: anvilConfig(name),
  dbPath: anvilDatabasePath(dir, name),
});

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

async function genesisHash(url: string): Promise<string> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x0",false]}',
  });
  return ((await response.json()) as { result: { hash: string } }).result.hash;
}

/** Waits until a running writer has recorded itself in the database's meta table. */
async function waitForWriter(dbPath: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (existsSync(dbPath)) {
      try {
        const db = new DatabaseConstructor(dbPath, { readonly: true });
        try {
          if (db.prepare("SELECT 1 FROM meta WHERE key = 'writer'").get() !== undefined) return;
        } finally {
          db.close();
        }
      } catch {
        // Not created yet.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no writer recorded in ${dbPath}`);
}

describe("one writer per database, read-only readers, no foreign files", () => {
  test("status on a missing database exits 2 naming the path, and creates no file", async () => {
    const { path, dbPath } = configFile("typo");
    const result = await runCli(["status", "--config", path]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `flashindex: error: database.path: ${dbPath} does not exist (point --db or database.path at the daemon's database)`,
    );
    expect(existsSync(dbPath)).toBe(false);
    const auth = await runCli(["auth", USDC, USDC, `0x${"1".repeat(64)}`, "--config", path]);
    expect(auth.code).toBe(2);
    const list = await runCli(["order", "list", "--config", path]);
    expect(list.code).toBe(2);
    expect(existsSync(dbPath)).toBe(false);
  });

  test("backfill into another program's SQLite file is refused (exit 2) and the file is unchanged", async () => {
    const { path, dbPath } = configFile("foreign");
    const foreign = new DatabaseConstructor(dbPath);
    foreign.exec(
      "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')",
    );
    foreign.close();
    const before = sha256(dbPath);
    const result = await runCli(["backfill", "--config", path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${dbPath} is a SQLite database but not a flashindex one`);
    expect(sha256(dbPath)).toBe(before);
    expect(existsSync(`${dbPath}.lock`)).toBe(false);
    const status = await runCli(["status", "--config", path]);
    expect(status.code).toBe(2);
    expect(sha256(dbPath)).toBe(before);
  });

  test("a second writer is refused at once naming the running one; readers keep working; kill -9 leaves no stale lock", async () => {
    const { path, dbPath } = configFile("busy");
    const daemon = spawnCli(["start", "--config", path]);
    try {
      await waitForWriter(dbPath);
      const backfill = await runCli(["backfill", "--config", path]);
      expect(backfill.code).toBe(2);
      expect(backfill.stderr).toContain(
        `${dbPath} is being written by another flashindex process (pid ${daemon.pid} on `,
      );
      expect(backfill.stderr).toContain("'start', since ");
      expect(backfill.stderr.trim().split("\n")).toHaveLength(1);
      const start = await runCli(["start", "--config", path]);
      expect(start.code).toBe(2);
      expect(start.stderr).toContain(`(pid ${daemon.pid} on `);
      const status = await runCli(["status", "--config", path, "--json"]);
      expect(status.code).toBe(0);
      expect((JSON.parse(status.stdout) as { database: string }).database).toBe(dbPath);
      expect((await runCli(["order", "list", "--config", path])).code).toBe(0);
    } finally {
      daemon.kill("SIGKILL");
      await new Promise((resolve) => daemon.once("exit", resolve));
    }
    const after = await runCli(["backfill", "--config", path]);
    expect(after.code, after.stderr).toBe(0);
  }, 60_000);

  test("a database filled from one chain is refused on a chain with another genesis (exit 2, both hashes named, nothing changed)", async () => {
    const { path, dbPath } = configFile("genesis");
    expect((await runCli(["backfill", "--config", path])).code).toBe(0);
    const before = sha256(dbPath);
    const other = writeConfig(
      dir,
      { ...JSON.parse(readFileSync(path, "utf8")), rpc: { http: [otherAnvil.httpUrl] } },
      "genesis-other.json",
    );
    const result = await runCli(["backfill", "--config", other]);
    expect(result.code).toBe(2);
    const [ours, theirs] = [
      await genesisHash(anvil.httpUrl),
      await genesisHash(otherAnvil.httpUrl),
    ];
    expect(ours).not.toBe(theirs);
    expect(result.stderr.trim()).toBe(
      `flashindex: error: database.path: database ${dbPath} belongs to chain 8453 with genesis ${ours}, but the RPC serves genesis ${theirs}; use another database.path`,
    );
    const start = await runCli(["start", "--config", other]);
    expect(start.code).toBe(2);
    expect(start.stderr).toContain(`but the RPC serves genesis ${theirs}`);
    expect(sha256(dbPath)).toBe(before);
    expect((await runCli(["backfill", "--config", path])).code).toBe(0);
  }, 60_000);
});
