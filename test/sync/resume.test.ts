import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import type { Config } from "../../src/config/types.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

let chain: PaymentChain;
let head: number;
let dir: string;

beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(8);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
  dir = mkdtempSync(join(tmpdir(), "flashindex-resume-"));
}, 60_000);
afterAll(async () => {
  await chain?.stop();
  await stopFileBackends();
});

/** A slow backfill (one block per window, a few requests per second) so a test can interrupt it. */
async function slowConfig(backend: TestBackend, name: string) {
  const database = (await backend.freshDatabase()) as Config["database"];
  const path = writeConfig(
    dir,
    {
      chainId: 8453,
      rpc: { http: [chain.anvil.httpUrl], requestsPerSecond: 8 },
      tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
      backfill: { windowBlocks: 1, concurrency: 2 },
      finality: { depth: 0 },
      database,
      metrics: { enabled: false },
      logLevel: "warn",
    },
    `${backend.name}-${name}.json`,
  );
  return { path, database };
}

async function waitForSyncedBlocks(
  backend: TestBackend,
  database: Config["database"],
  atLeast: number,
): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      const db = await backend.reader(database);
      try {
        const [row] = await db.all<{ n: number | string }>(
          "SELECT COALESCE(SUM(to_block - from_block + 1), 0) AS n FROM synced_ranges",
        );
        if (Number(row!.n) >= atLeast) return;
      } finally {
        await db.close();
      }
    } catch {
      // The database or its schema may not exist yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("backfill made no progress");
}

type Snapshot = { logs: string[]; ranges: Array<{ from_block: number; to_block: number }> };
async function snapshot(backend: TestBackend, database: Config["database"]): Promise<Snapshot> {
  const db = await backend.reader(database);
  const logs = (
    await db.all("SELECT block_hash, log_index, tx_hash FROM logs ORDER BY block_number, log_index")
  ).map((r) => `${String(r.block_hash)}|${String(r.log_index)}|${String(r.tx_hash)}`);
  const ranges = await db.all<Snapshot["ranges"][number]>(
    "SELECT from_block, to_block FROM synced_ranges ORDER BY from_block",
  );
  await db.close();
  return { logs, ranges };
}

async function directLogs(from: number, to: number): Promise<string[]> {
  const logs = (await chain.publicClient.request({
    method: "eth_getLogs",
    params: [
      {
        fromBlock: `0x${from.toString(16)}`,
        toBlock: `0x${to.toString(16)}`,
        address: chain.token,
        topics: [[...PAYMENT_TOPICS]],
      },
    ],
  } as never)) as Array<{
    blockHash: string;
    logIndex: string;
    transactionHash: string;
    blockNumber: string;
  }>;
  return logs.map((l) => `${l.blockHash}|${Number(l.logIndex)}|${l.transactionHash}`);
}

/** Every synced range holds exactly the chain's logs for those blocks: no half-written window. */
async function expectConsistent(s: Snapshot): Promise<void> {
  const expected: string[] = [];
  for (const r of s.ranges) expected.push(...(await directLogs(r.from_block, r.to_block)));
  expect(s.logs).toEqual(expected);
}

describe.each(BACKENDS)("backfill across process deaths on $name", (backend) => {
  test("resumes after SIGKILL mid-backfill with no gap and no duplicate", async () => {
    const { path, database } = await slowConfig(backend, "kill");
    const child = spawnCli(["backfill", "--config", path]);
    await waitForSyncedBlocks(backend, database, 5);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.on("exit", resolve));
    const partial = await snapshot(backend, database);
    const partialBlocks = partial.ranges.reduce((n, r) => n + r.to_block - r.from_block + 1, 0);
    expect(partialBlocks).toBeLessThan(head - chain.deployBlock + 1);
    await expectConsistent(partial);

    const finish = await runCli(["backfill", "--config", path]);
    expect(finish.code).toBe(0);
    const done = await snapshot(backend, database);
    expect(done.ranges).toEqual([{ from_block: chain.deployBlock, to_block: head }]);
    expect(done.logs).toEqual(await directLogs(chain.deployBlock, head));
    expect(new Set(done.logs).size).toBe(done.logs.length);
  });

  test("SIGTERM finishes the window in flight, exits 0, and leaves a consistent database", async () => {
    const { path, database } = await slowConfig(backend, "term");
    const child = spawnCli(["backfill", "--config", path]);
    await waitForSyncedBlocks(backend, database, 3);
    child.kill("SIGTERM");
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(0);
    const stopped = await snapshot(backend, database);
    await expectConsistent(stopped);
    if (backend.name === "sqlite") {
      const db = new DatabaseConstructor(database.path, { readonly: true });
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      db.close();
    }
  });
});
