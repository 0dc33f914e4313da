import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createWalletClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Config } from "../../src/config/types.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { EXIT_TEMPORARY } from "../../src/errors/base.js";
import { connectionConfig } from "../../src/store/postgres/connection.js";
import { describeLocation } from "../../src/store/postgres/location.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

let chain: PaymentChain;
let dir: string;
const daemons: Array<ReturnType<typeof spawnCli>> = [];
beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(1);
  dir = mkdtempSync(join(tmpdir(), "flashindex-standby-"));
}, 60_000);
afterAll(async () => {
  for (const daemon of daemons) daemon.kill("SIGKILL");
  await chain?.stop();
  await stopFileBackends();
});

/** Live traffic: `blocks` payment transactions (anvil mines one block each), three Transfer logs apiece. */
async function pay(blocks: number): Promise<void> {
  const wallet = createWalletClient({
    account: privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as Hex),
    transport: http(chain.anvil.httpUrl),
  });
  const to = [
    "0x00000000000000000000000000000000000000a1",
    "0x00000000000000000000000000000000000000a2",
    "0x00000000000000000000000000000000000000a3",
  ] as Address[];
  for (let i = 0; i < blocks; i++) {
    const hash = await wallet.writeContract({
      address: chain.token,
      abi: flashTestTokenAbi,
      functionName: "emitTransfers",
      args: [to, [1n, 2n, 3n]],
      chain: null,
    });
    await chain.publicClient.waitForTransactionReceipt({ hash });
  }
}

/** A config (and its environment) for a daemon on a fresh schema of the file's database, following the chain. */
async function freshDaemonConfig(): Promise<{
  database: Config["database"];
  path: string;
  env: NodeJS.ProcessEnv;
}> {
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
      finality: { depth: 3 },
      database: { schema: database.schema },
      realtime: { pendingPollIntervalMs: 0, headPollIntervalMs: 200 },
      metrics: { enabled: false },
      logLevel: "info",
    },
    `${database.schema}.json`,
  );
  return { database, path, env: { FLASHINDEX_DATABASE_URL: database.url! } };
}

const started = (daemon: ReturnType<typeof spawnCli>, line: string) =>
  waitFor(() => daemon.output().stdout.includes(line), 30_000, line);

test("start --standby waits while another daemon writes the Postgres schema, takes over after a kill -9 during traffic, and ends with the chain's logs", async () => {
  const { database, path, env } = await freshDaemonConfig();
  const writer = spawnCli(["start", "--config", path], env);
  daemons.push(writer);
  await started(writer, "Caught up with the head");
  const standby = spawnCli(["start", "--config", path, "--standby"], env);
  daemons.push(standby);
  await started(standby, "Waiting as a standby");

  await pay(3);
  writer.kill("SIGKILL");
  await pay(3);
  await started(standby, "Took over as the writer");
  await started(standby, "Caught up with the head");
  await pay(3);

  const logs = (await chain.publicClient.request({
    method: "eth_getLogs",
    params: [
      { fromBlock: "0x0", toBlock: "latest", address: chain.token, topics: [[...PAYMENT_TOPICS]] },
    ],
  } as never)) as Array<{ blockHash: string; logIndex: string }>;
  const expected = logs.map((l) => `${l.blockHash}:${Number(l.logIndex)}`).sort();
  const client = new pg.Client(connectionConfig(database.url!, database.schema));
  await client.connect();
  try {
    const stored = async () =>
      (
        await client.query(
          "SELECT block_hash, log_index FROM logs WHERE status IN ('confirmed', 'finalized')",
        )
      ).rows
        .map((r) => `${r.block_hash}:${r.log_index}`)
        .sort();
    await waitFor(
      async () => (await stored()).join() === expected.join(),
      20_000,
      "the standby's rows equal the chain's logs",
    );
    expect((await client.query("SELECT COUNT(*)::int AS n FROM logs")).rows[0].n).toBe(
      expected.length,
    );
    expect((await client.query("SELECT value FROM meta WHERE key = 'writer_epoch'")).rows).toEqual([
      { value: "2" },
    ]);
  } finally {
    await client.end();
  }
  standby.kill("SIGTERM");
  await new Promise((resolve) => standby.once("exit", resolve));
  expect(standby.exitCode).toBe(0);
}, 120_000);

/** The server process holding the writer lock of `schema` (writerLock.ts takes `hashtext('flashindex:writer:' || schema)` as a bigint). */
async function lockHolderPid(client: pg.Client, schema: string): Promise<number | undefined> {
  const { rows } = await client.query(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND objid::bigint = (hashtext($1)::bigint & 4294967295) AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [`flashindex:writer:${schema}`],
  );
  return rows[0]?.pid as number | undefined;
}

test("a daemon whose writer-lock connection is terminated stops before its next write: exit 75, one line", async () => {
  const { database, path, env } = await freshDaemonConfig();
  const daemon = spawnCli(["start", "--config", path], env);
  daemons.push(daemon);
  const exited = new Promise<number | null>((resolve) => daemon.once("exit", resolve));
  await started(daemon, "Caught up with the head");

  const admin = new pg.Client({ connectionString: database.url! });
  await admin.connect();
  try {
    const pid = await lockHolderPid(admin, database.schema);
    expect(pid).toBeTypeOf("number");
    expect((await admin.query("SELECT pg_terminate_backend($1) AS done", [pid])).rows[0].done).toBe(
      true,
    );
    // The lock went with its connection.
    await waitFor(
      async () => (await lockHolderPid(admin, database.schema)) === undefined,
      10_000,
      "the lock released",
    );
  } finally {
    await admin.end();
  }

  // A payment gives the daemon something to write: it must stop instead.
  await pay(1);

  expect(await exited).toBe(EXIT_TEMPORARY);
  const { stdout, stderr } = daemon.output();
  expect(stderr.trim().split("\n")).toEqual([
    `flashindex: failed: Lost the connection holding the writer lock of ${describeLocation(database.url!, database.schema)}: stopping rather than writing beside another writer`,
  ]);
  expect(stdout).toContain('"reason":"writer_lost"');
}, 90_000);
