import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { testConfig, testDeps, withSqliteStore } from "../helpers/context.js";
import { createPayer, startDevnetWithPayments } from "../helpers/devnetPayments.js";

let devnet: Devnet;
let head: number;
const rpc = <T>(method: string, params: unknown[] = []) =>
  createPayer(devnet).rpc<T>(method, params);

beforeAll(async () => {
  ({ devnet, head } = await startDevnetWithPayments(12, 3));
}, 60_000);
afterAll(() => devnet?.stop());

describe("backfill() behind Base's public endpoint (proxyd's error statuses)", () => {
  test("splits windows on HTTP 400 'block range greater than N max', rides out 503s, and stores every log", async () => {
    await rpc("devnet_setFaults", [{ maxBlockRange: 3, proxyErrors: true, errorRate: 0.2 }]);
    try {
      const config = testConfig({
        rpc: {
          http: [devnet.httpUrl],
          retry: { maxAttempts: 12, initialDelayMs: 1, maxDelayMs: 5 },
        },
        tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
        backfill: { windowBlocks: 10, concurrency: 2 },
        finality: { depth: 0 },
        database: { path: join(mkdtempSync(join(tmpdir(), "flashindex-proxyd-")), "index.db") },
      });
      const deps = testDeps(config);
      const client = createRpcClient(deps);
      const db = openDatabase(config.database.path, config.chainId);
      await backfill(withSqliteStore({ ...deps, client }, db), { to: head, finalized: head });
      await rpc("devnet_setFaults", [{}]);
      const direct = await rpc<unknown[]>("eth_getLogs", [
        {
          fromBlock: "0x0",
          toBlock: `0x${head.toString(16)}`,
          address: devnet.token,
          topics: [[...PAYMENT_TOPICS]],
        },
      ]);
      expect(db.prepare("SELECT COUNT(*) FROM logs").pluck().get()).toBe(direct.length);
      expect(direct.length).toBeGreaterThanOrEqual(36);
      expect(
        db
          .prepare(
            "SELECT MIN(from_block) AS from_block, MAX(to_block) AS to_block FROM synced_ranges",
          )
          .get(),
      ).toEqual({ from_block: devnet.tokenDeployBlock, to_block: head });
      expect((await deps.metrics.backfillWindowBlocks.get()).values[0]?.value).toBeLessThanOrEqual(
        3,
      );
      const outcomes = (await deps.metrics.rpcRequests.get()).values
        .filter((v) => v.labels.method === "eth_getLogs")
        .map((v) => v.labels.outcome);
      expect(outcomes).toContain("range_error");
      expect(outcomes).not.toContain("fatal");
      db.close();
    } finally {
      await rpc("devnet_setFaults", [{}]);
    }
  });
});
