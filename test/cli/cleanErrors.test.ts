import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { anvilConfigFiles, runCli, unprivileged } from "../helpers/cli.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
let anvil: Anvil;
let dir: string;
let blocker: Server;
/** A port another process (this test) holds for the whole file. */
let takenPort: number;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  dir = mkdtempSync(join(tmpdir(), "flashindex-errors-"));
  // The unprivileged CLI user must read the configs written here.
  chmodSync(dir, 0o755);
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  takenPort = (blocker.address() as { port: number }).port;
}, 30_000);
afterAll(async () => {
  await anvil?.stop();
  blocker?.close();
});

const configFile = anvilConfigFiles(() => ({ dir, rpcUrl: anvil.httpUrl, token: USDC }), {
  defaults: { logLevel: "warn" },
  fileMode: 0o644,
});

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** One line on stderr starting with the error prefix, and no stack frame anywhere. */
function expectOneLine(result: { stderr: string; stdout: string }, ...parts: string[]): void {
  const lines = result.stderr.trim().split("\n");
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^flashindex: error: /);
  for (const part of parts) expect(lines[0]).toContain(part);
  expect(result.stderr + result.stdout).not.toMatch(/\n\s+at |unexpected error|Unhandled/);
}

describe("one line and an exit code, never a stack trace", () => {
  test("a database file of random bytes: start, backfill, status and order list exit 2 naming it, and it stays unchanged", async () => {
    const path = configFile("random");
    const dbPath = join(dir, "random.db");
    writeFileSync(
      dbPath,
      createHash("sha512").update("not sqlite").digest().toString("hex").repeat(64),
    );
    const before = sha256(dbPath);
    for (const args of [["start"], ["backfill"], ["status"], ["order", "list"]]) {
      const result = await runCli([...args, "--config", path]);
      expect(result.code, args.join(" ")).toBe(2);
      expectOneLine(result, `database.path: ${dbPath} is not a SQLite database`);
    }
    const json = await runCli(["status", "--json", "--config", path]);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        code: "config_error",
        message: expect.stringContaining(`${dbPath} is not a SQLite database`),
      },
    });
    expect(sha256(dbPath)).toBe(before);
    expect(existsSync(`${dbPath}.lock`)).toBe(false);
  }, 60_000);

  test("a database under a path whose parent is a file exits 2 naming the directory", async () => {
    const path = configFile("notdir");
    writeFileSync(join(dir, "plain-file"), "x");
    const dbPath = join(dir, "plain-file", "sub", "x.db");
    for (const command of ["backfill", "start"]) {
      const result = await runCli([command, "--config", path, "--db", dbPath]);
      expect(result.code).toBe(2);
      expectOneLine(
        result,
        `database.path: cannot create the directory ${join(dir, "plain-file", "sub")} for ${dbPath}`,
        "use another database.path",
      );
    }
  }, 30_000);

  test("a directory the process cannot write, and a missing parent it cannot create, exit 2 naming the path", async () => {
    const path = configFile("unwritable");
    const locked = join(dir, "locked");
    mkdirSync(locked, { mode: 0o555 });
    chmodSync(locked, 0o555);
    const inLocked = await runCli(
      ["backfill", "--config", path, "--db", join(locked, "x.db")],
      {},
      unprivileged(),
    );
    expect(inLocked.code).toBe(2);
    expectOneLine(inLocked, `${join(locked, "x.db")}`, "use another database.path");
    const deeper = await runCli(
      ["start", "--config", path, "--db", join(locked, "sub", "x.db")],
      {},
      unprivileged(),
    );
    expect(deeper.code).toBe(2);
    expectOneLine(
      deeper,
      `cannot create the directory ${join(locked, "sub")}`,
      "permission denied",
    );
    expect(existsSync(join(locked, "sub"))).toBe(false);
  }, 30_000);

  test("a read-only database file exits 2 naming it, and its content stays unchanged", async () => {
    const path = configFile("readonly");
    const dbPath = join(dir, "readonly.db");
    expect((await runCli(["backfill", "--config", path])).code).toBe(0);
    const shared = join(dir, "shared");
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o777);
    const copy = join(shared, "readonly.db");
    writeFileSync(copy, readFileSync(dbPath));
    chmodSync(copy, 0o444);
    const before = sha256(copy);
    const result = await runCli(["backfill", "--config", path, "--db", copy], {}, unprivileged());
    expect(result.code).toBe(2);
    expectOneLine(result, `database.path: ${copy} is not writable`, "use another database.path");
    expect(sha256(copy)).toBe(before);
  }, 30_000);

  test("the metrics port taken by another process exits 2 naming the address and metrics.port", async () => {
    const path = configFile("metrics", { metrics: { enabled: true, port: takenPort } });
    const result = await runCli(["start", "--config", path]);
    expect(result.code).toBe(2);
    expectOneLine(
      result,
      `metrics.port: 127.0.0.1:${takenPort} is already in use by another process; choose another with metrics.port`,
    );
    expect(
      readdirSync(dir).filter((name) => name.startsWith("metrics")),
      "no lock file left beside the database",
    ).toEqual(["metrics.json"]);
  }, 30_000);

  test("flashindex devnet on a taken port, or an impossible one, exits 2 naming --port", async () => {
    const taken = await runCli(["devnet", "--port", String(takenPort)]);
    expect(taken.code).toBe(2);
    expectOneLine(taken, `--port: 127.0.0.1:${takenPort} is already in use by another process`);
    const impossible = await runCli(["devnet", "--port", "99999"]);
    expect(impossible.code).toBe(2);
    expectOneLine(impossible, "--port: expected a whole number from 0 to 65535");
  }, 60_000);

  test("start with the bundled devnet on a taken devnet.port exits 2 naming devnet.port", async () => {
    const path = configFile("devnetport", {
      rpc: undefined,
      devnet: { port: takenPort, paymentsPerSecond: 0 },
      tokens: [{ address: "0x5FbDB2315678afecb367f032d93F642f64180aa3", startBlock: 0 }],
    });
    const result = await runCli(["start", "--config", path]);
    expect(result.code).toBe(2);
    expectOneLine(
      result,
      `devnet.port: 127.0.0.1:${takenPort} is already in use by another process; choose another with devnet.port`,
    );
  }, 60_000);
});
