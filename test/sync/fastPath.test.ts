import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getBlockHeader } from "../../src/chain/blockHeaders.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import type { Config } from "../../src/config/types.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/backfill.js";
import { getBlockRows } from "../../src/sync/canonicalBlocks.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { BACKENDS, stopFileBackends, type TableReader, type TestBackend } from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

let chain: PaymentChain;
let head: number;
beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(5);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}, 60_000);
afterAll(async () => {
  await chain?.stop();
  await stopFileBackends();
});

async function setUp(backend: TestBackend) {
  const config = testConfig({
    rpc: { http: [chain.anvil.httpUrl] },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    backfill: { windowBlocks: 3, concurrency: 3 },
    finality: { depth: 0 },
    database: await backend.freshDatabase(),
  });
  const deps = testDeps(config);
  const client = createRpcClient(deps);
  const store = await openStore(config, { metrics: deps.metrics });
  const reader = await backend.reader(config.database as Config["database"]);
  return { ...deps, config, client, store, reader, close: async () => (await store.close(), await reader.close()) };
}

/** What a user reads: every column but our own clock, row ids and which path wrote the row. */
async function contents(db: TableReader, backend: TestBackend) {
  const logs = await db.all(
    "SELECT chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, tx_log_position, status FROM logs ORDER BY block_number, log_index",
  );
  const transfers = await db.all("SELECT chain_id, token, from_address, to_address, value, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM transfers ORDER BY block_number, log_index");
  const authorizations = await db.all("SELECT chain_id, token, authorizer, nonce, kind, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM authorization_events ORDER BY block_number, log_index");
  const states = await db.all("SELECT * FROM authorization_states ORDER BY nonce");
  const indexes =
    backend.name === "sqlite"
      ? await db.all("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
      : await db.all("SELECT indexname, replace(indexdef, current_schema() || '.', '') AS indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname");
  const foreignKeys =
    backend.name === "sqlite" ? [] : await db.all("SELECT conname, convalidated FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace ORDER BY conname");
  return { logs, transfers, authorizations, states, indexes, foreignKeys };
}

describe.each(BACKENDS)("the backfill's fast path on $name", (backend) => {
  test("stores exactly what the block-by-block path stores, row for row (bulk writes, deferred reader indexes)", async () => {
    const fast = await setUp(backend);
    await backfill(createSyncDeps(fast, fast.store), { to: head, finalized: head }, { bulkMinLogs: 1, writerThread: true, decodeThreadAfterLogs: 0 });
    expect(fast.lines.some((l) => l.msg === "Deferred reader indexes to the end of the backfill")).toBe(true);

    const slow = await setUp(backend);
    const token = chain.token.toLowerCase() as `0x${string}`;
    for (let n = chain.deployBlock; n <= head; n++) {
      const header = (await getBlockHeader(slow.client, n))!;
      const rows = await getBlockRows({ ...slow, chainId: slow.config.chainId, tokens: [token] }, header, "finalized");
      await slow.store.applyChainChange({ kind: "head_block", orphaned: [], blocks: [{ number: n, rows }], synced: [{ token, range: { from: n, to: n } }] }, Date.now());
    }

    const expected = await contents(slow.reader, backend);
    expect(expected.logs.length).toBeGreaterThan(40);
    expect(expected.authorizations.length).toBeGreaterThan(0);
    expect(await contents(fast.reader, backend)).toEqual(expected);
    await fast.close();
    await slow.close();
  });
});
