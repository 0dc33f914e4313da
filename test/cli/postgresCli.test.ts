import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Config } from "../../src/config/types.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

/** The test cluster's password: it must never reach an output stream. */
const PASSWORD = "flashindex-test";

let chain: PaymentChain;
let head: number;
let dir: string;

beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(4);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
  dir = mkdtempSync(join(tmpdir(), "flashindex-pgcli-"));
}, 60_000);
afterAll(async () => {
  await chain?.stop();
  await stopFileBackends();
});

/** A config file without the URL (it comes from FLASHINDEX_DATABASE_URL, as documented) and its env. */
async function pgConfig(name: string, overrides: Record<string, unknown> = {}) {
  const database = (await postgresBackend.freshDatabase()) as Config["database"];
  const path = writeConfig(
    dir,
    {
      chainId: 8453,
      rpc: {
        http: [chain.anvil.httpUrl],
        retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
      },
      tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
      finality: { depth: 0 },
      database: { schema: database.schema },
      realtime: { pendingPollIntervalMs: 0, headPollIntervalMs: 200 },
      metrics: { enabled: false },
      logLevel: "info",
      ...overrides,
    },
    `${name}.json`,
  );
  return { path, database, env: { FLASHINDEX_DATABASE_URL: database.url! } };
}

const noPassword = (result: { stdout: string; stderr: string }) =>
  expect(result.stdout + result.stderr).not.toContain(PASSWORD);

describe("the CLI on Postgres (FLASHINDEX_DATABASE_URL)", () => {
  test("backfill, status, auth and order work, and never print the password", async () => {
    const { path, database, env } = await pgConfig("basic");
    const backfill = await runCli(["backfill", "--config", path, "--json"], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    noPassword(backfill);

    const status = await runCli(["status", "--config", path, "--json"], env);
    expect(status.code, status.stderr).toBe(0);
    noPassword(status);
    const report = JSON.parse(status.stdout) as {
      database: string;
      tokens: Array<{
        checkpoint: number;
        synced_ranges: Array<{ from: number; to: number }>;
        rows: Array<{ status: string; transfers: number; authorizations: number }>;
      }>;
    };
    expect(report.database).toContain(`(schema ${database.schema})`);
    expect(report.tokens[0]!.checkpoint).toBe(head);
    expect(report.tokens[0]!.synced_ranges).toEqual([{ from: chain.deployBlock, to: head }]);
    const reader = await postgresBackend.reader(database);
    const counted = await reader.all<{ transfers: number; authorizations: number }>(
      "SELECT (SELECT COUNT(*) FROM transfers) AS transfers, (SELECT COUNT(*) FROM authorization_events) AS authorizations",
    );
    expect(report.tokens[0]!.rows).toEqual([{ status: "finalized", ...counted[0]! }]);

    const [captured] = await reader.all<{ token: string; authorizer: string; nonce: string }>(
      "SELECT token, authorizer, nonce FROM authorization_states WHERE state = 'captured' LIMIT 1",
    );
    await reader.close();
    // Checksummed on the command line: the store lower-cases, as addresses are stored.
    const auth = await runCli(
      [
        "auth",
        getAddress(captured!.token),
        getAddress(captured!.authorizer),
        captured!.nonce,
        "--config",
        path,
        "--json",
      ],
      env,
    );
    expect(auth.code, auth.stderr).toBe(0);
    expect(JSON.parse(auth.stdout)).toMatchObject({ state: "captured", comparison: "agree" });

    const orders = await runCli(["order", "list", "--config", path, "--json"], env);
    expect(orders.code, orders.stderr).toBe(0);
    expect(JSON.parse(orders.stdout)).toEqual([]);
    const missing = await runCli(["order", "void", "7", "--config", path], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no order 7");
  });

  test("one writer per schema: a second is refused (exit 2) naming the first; the lock dies with a killed daemon", async () => {
    const { path, env } = await pgConfig("lock");
    const daemon = spawnCli(["start", "--config", path], env);
    await waitFor(
      () => daemon.output().stdout.includes("Caught up with the head"),
      30_000,
      "the daemon caught up",
    );
    const second = await runCli(["backfill", "--config", path], env);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(
      /is being written by another flashindex process \(pid \d+ .*'start'/,
    );
    expect(second.stderr).toContain("database.schema");
    noPassword(second);

    daemon.kill("SIGKILL");
    await new Promise((resolve) => daemon.on("exit", resolve));
    noPassword(daemon.output());
    const after = await runCli(["backfill", "--config", path], env);
    expect(after.code, after.stderr).toBe(0);
  });

  test("a refused password is a config error (exit 2) that does not print it; a bad URL names the variable; an unreachable server exits 75", async () => {
    const { path, database } = await pgConfig("badpass");
    const wrong = database.url!.replace(PASSWORD, "not-the-password");
    const refused = await runCli(["backfill", "--config", path], {
      FLASHINDEX_DATABASE_URL: wrong,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("password was refused");
    expect(refused.stderr).not.toContain("not-the-password");
    const bad = await runCli(["status", "--config", path], {
      FLASHINDEX_DATABASE_URL: "mysql://x@y/z",
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("FLASHINDEX_DATABASE_URL");
    // Nothing listens there: an outage that may pass (exit 75), named without the password.
    const down = await runCli(["status", "--config", path], {
      FLASHINDEX_DATABASE_URL: "postgres://u:secretpw@127.0.0.1:9/x",
    });
    expect(down.code, down.stderr).toBe(75);
    expect(down.stderr).toContain("postgres://***@127.0.0.1:9/x");
    expect(down.stderr).not.toContain("secretpw");
  });
});
