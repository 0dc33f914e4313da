import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getBlockHeader } from "../../src/chain/blockHeaders.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { createLifecycle } from "../../src/store/lifecycle.js";
import { openDatabase, type Database } from "../../src/store/openDatabase.js";
import { backfill } from "../../src/sync/backfill.js";
import { getBlockRows } from "../../src/sync/canonicalBlocks.js";
import { testConfig, testDeps, withSqliteStore } from "../helpers/context.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

let chain: PaymentChain;
let head: number;
beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(5);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}, 60_000);
afterAll(() => chain?.stop());

function setUp(name: string) {
  const config = testConfig({
    rpc: { http: [chain.anvil.httpUrl] },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    backfill: { windowBlocks: 3, concurrency: 3 },
    finality: { depth: 0 },
    database: { path: join(mkdtempSync(join(tmpdir(), `flashindex-${name}-`)), "index.db") },
  });
  const deps = testDeps(config);
  const client = createRpcClient(deps);
  const db = openDatabase(config.database.path, config.chainId);
  return withSqliteStore({ ...deps, client, db }, db);
}

/** What a user reads: every column but our own clock, row ids and which path wrote the row. */
function contents(db: Database) {
  const logs = db
    .prepare("SELECT chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, tx_log_position, status FROM logs ORDER BY block_number, log_index")
    .all();
  const transfers = db.prepare("SELECT chain_id, token, from_address, to_address, value, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM transfers ORDER BY block_number, log_index").all();
  const authorizations = db.prepare("SELECT chain_id, token, authorizer, nonce, kind, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM authorization_events ORDER BY block_number, log_index").all();
  const states = db.prepare("SELECT * FROM authorization_states ORDER BY nonce").all();
  const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name").all();
  return { logs, transfers, authorizations, states, indexes };
}

describe("the backfill's fast path", () => {
  test("stores exactly what the block-by-block path stores, row for row (writer thread, deferred reader indexes)", async () => {
    const fast = setUp("fast");
    await backfill(fast, { to: head, finalized: head }, { bulkMinLogs: 1, writerThread: true });
    expect(fast.lines.some((l) => l.msg === "Deferred reader indexes to the end of the backfill")).toBe(true);

    const slow = setUp("slow");
    const lifecycle = createLifecycle(slow.db);
    for (let n = chain.deployBlock; n <= head; n++) {
      const header = (await getBlockHeader(slow.client, n))!;
      const rows = await getBlockRows({ ...slow, chainId: slow.config.chainId, tokens: [chain.token.toLowerCase() as `0x${string}`] }, header, "finalized");
      slow.db.transaction(() => lifecycle.applyCanonicalBlock(n, rows, Date.now())).immediate();
    }

    const expected = contents(slow.db);
    expect(expected.logs.length).toBeGreaterThan(40);
    expect(contents(fast.db)).toEqual(expected);
    fast.db.close();
    slow.db.close();
  });
});
