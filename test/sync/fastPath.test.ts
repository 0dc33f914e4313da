import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getBlockHeader } from "../../src/chain/blockHeaders.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import type { Config } from "../../src/config/types.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { getBlockRows } from "../../src/sync/head/getBlockRows.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import {
  BACKENDS,
  stopFileBackends,
  type TableReader,
  type TestBackend,
} from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

const ZERO_WORD = `0x${"0".repeat(64)}` as const;

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

async function setUp(backend: TestBackend, options: { attribution?: boolean } = {}) {
  const config = testConfig({
    attribution: { enabled: options.attribution === true },
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
  return {
    ...deps,
    config,
    client,
    store,
    reader,
    close: async () => (await store.close(), await reader.close()),
  };
}

/** What a user reads: every column but our own clock, row ids and which path wrote the row. */
async function contents(db: TableReader, backend: TestBackend) {
  const logs = await db.all(
    "SELECT chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, tx_log_position, status FROM logs ORDER BY block_number, log_index",
  );
  const transfers = await db.all(
    "SELECT chain_id, token, from_address, to_address, value, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM transfers ORDER BY block_number, log_index",
  );
  const authorizations = await db.all(
    "SELECT chain_id, token, authorizer, nonce, kind, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM authorization_events ORDER BY block_number, log_index",
  );
  const states = await db.all("SELECT * FROM authorization_states ORDER BY nonce");
  const indexes =
    backend.name === "sqlite"
      ? await db.all("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
      : await db.all(
          "SELECT indexname, replace(indexdef, current_schema() || '.', '') AS indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname",
        );
  const foreignKeys =
    backend.name === "sqlite"
      ? []
      : await db.all(
          "SELECT conname, convalidated FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace ORDER BY conname",
        );
  return { logs, transfers, authorizations, states, indexes, foreignKeys };
}

describe.each(BACKENDS)("the backfill's fast path on $name", (backend) => {
  test("stores exactly what the block-by-block path stores, row for row (bulk writes, deferred reader indexes)", async () => {
    const fast = await setUp(backend);
    await backfill(
      createSyncDeps(fast, fast.store),
      { to: head, finalized: head },
      { bulkMinLogs: 1, writerThread: true, decodeThreadAfterLogs: 0 },
    );
    expect(
      fast.lines.some((l) => l.msg === "Deferred reader indexes to the end of the backfill"),
    ).toBe(true);

    const slow = await setUp(backend);
    const token = chain.token.toLowerCase() as `0x${string}`;
    for (let n = chain.deployBlock; n <= head; n++) {
      const header = (await getBlockHeader(slow.client, n))!;
      const rows = await getBlockRows(
        { ...slow, chainId: slow.config.chainId, tokens: [token] },
        header,
        "finalized",
      );
      await slow.store.applyChainChange(
        {
          kind: "head_block",
          orphaned: [],
          blocks: [{ number: n, rows }],
          synced: [{ token, range: { from: n, to: n } }],
        },
        Date.now(),
      );
    }

    const expected = await contents(slow.reader, backend);
    expect(expected.logs.length).toBeGreaterThan(40);
    expect(expected.authorizations.length).toBeGreaterThan(0);
    expect(await contents(fast.reader, backend)).toEqual(expected);
    await fast.close();
    await slow.close();
  });

  test("moves a bulk load's staged attribution into place at its end: the rows windows written one by one store", async () => {
    // Every column but our own clock.
    const attribution = async (db: TableReader) => ({
      transactions: await db.all(
        "SELECT tx_hash, chain_id, from_address, to_address, selector, input_bytes, attribution, schema_id, registry_address, registry_chain_id, malformed_reason, registry_error, user_operations FROM transactions ORDER BY tx_hash",
      ),
      codes: await db.all("SELECT * FROM attribution_codes ORDER BY tx_hash, op_index, position"),
      userOperations: await db.all("SELECT * FROM user_operations ORDER BY tx_hash, op_index"),
    });
    const bulk = await setUp(backend, { attribution: true });
    await backfill(
      createSyncDeps(bulk, bulk.store),
      { to: head, finalized: head },
      { bulkMinLogs: 1, writerThread: true, decodeThreadAfterLogs: 0, stageAttribution: true },
    );
    // A store holding a log (a pre-confirmation far ahead) and a bulk threshold never reached: windows one by one.
    const oneByOne = await setUp(backend, { attribution: true });
    const ahead = head + 1_000;
    const { rows } = toLogRows(
      [
        {
          address: chain.token,
          topics: [TRANSFER_TOPIC, ZERO_WORD, ZERO_WORD],
          data: ZERO_WORD,
          blockNumber: ahead,
          blockHash: ZERO_WORD,
          blockTimestamp: 0,
          transactionHash: `0x${"ab".repeat(32)}`,
          transactionIndex: 0,
          logIndex: 0,
          removed: false,
        },
      ],
      {
        chainId: oneByOne.config.chainId,
        statusOf: () => "preconfirmed",
        source: "pending",
        timestampOf: () => 0,
      },
    );
    await oneByOne.store.insertPreconfirmed(rows, Date.now());
    await backfill(
      createSyncDeps(oneByOne, oneByOne.store),
      { to: head, finalized: head },
      { bulkMinLogs: Number.MAX_SAFE_INTEGER, writerThread: true, decodeThreadAfterLogs: 0 },
    );
    // Postgres counts stored rows by estimate (none before its statistics run): it may load in bulk, and never stages anyway.
    if (backend.name === "sqlite")
      expect(
        oneByOne.lines.some((l) => l.msg === "Deferred reader indexes to the end of the backfill"),
      ).toBe(false);

    const expected = await attribution(oneByOne.reader);
    const transactions = await bulk.reader.all("SELECT DISTINCT tx_hash FROM logs");
    expect(transactions.length).toBeGreaterThan(10);
    expect(expected.transactions).toHaveLength(transactions.length);
    expect(await attribution(bulk.reader)).toEqual(expected);
    expect(await bulk.store.stagedAttribution.pending()).toBe(false);
    if (backend.name === "sqlite") {
      const moved = bulk.lines.find((l) => l.msg === "Moved staged attribution into place");
      // The first window goes in before the load turns bulk (an empty store: from the start).
      expect(moved?.transactions).toBe(transactions.length);
    }
    await bulk.close();
    await oneByOne.close();
  });
});
