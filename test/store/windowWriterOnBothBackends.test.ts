import type { Hex } from "viem";
import { packRows } from "../../src/rows/packedRows.js";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import type { Config } from "../../src/config/types.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { RetryableError } from "../../src/errors/base.js";
import { openStore } from "../../src/store/openStore.js";
import type { WindowWrite } from "../../src/store/types.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";
import { waitFor, word } from "../helpers/fixtures.js";

const TOKEN: Hex = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

/** Blocks [from, to] with `perBlock` Transfers each, as one backfill window. */
/** The window's logs as rows (unpacked, so a test can list one twice), and the window that packs them. */
function windowRows(from: number, to: number, perBlock: number) {
  const logs: RpcLog[] = [];
  for (let block = from; block <= to; block++)
    for (let i = 0; i < perBlock; i++)
      logs.push({
        address: TOKEN,
        topics: [TRANSFER_TOPIC, word("a11ce"), word("b0b")],
        data: word((block * 100 + i + 1).toString(16)),
        blockNumber: block,
        blockHash: word(`b${block.toString(16)}`),
        blockTimestamp: 1_700_000_000 + block,
        transactionHash: word(`7${(block * 100 + i).toString(16)}`),
        transactionIndex: i,
        logIndex: i,
        removed: false,
      });
  return toLogRows(logs, {
    chainId: 8453,
    statusOf: () => "finalized",
    source: "backfill",
    timestampOf: () => 0,
  }).rows;
}

function window(from: number, to: number, perBlock: number): WindowWrite {
  return {
    from,
    to,
    tokens: [TOKEN],
    rows: packRows(windowRows(from, to, perBlock)),
    attribution: { batches: [] },
  };
}

describe.each(BACKENDS)("backfill windows on %s", (backend: TestBackend) => {
  test("windows committed side by side store every log once and merge their ranges into one", async () => {
    const config = testConfig({
      rpc: { http: ["http://127.0.0.1:9"] },
      database: await backend.freshDatabase(),
    });
    const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
    open.push(store);
    const emptySize = await store.sizeBytes();
    const writer = store.openWindowWriter({ bulk: backend.name === "sqlite" });
    // Out of order and at once, as finished windows arrive; the middle one last.
    const counts = await Promise.all(
      [window(1, 40, 25), window(81, 120, 25), window(41, 80, 25)].map((w) => writer.commit(w, 1)),
    );
    await writer.close();

    expect(counts.map((c) => c.inserted)).toEqual([1_000, 1_000, 1_000]);
    expect(await store.syncedRanges(TOKEN)).toEqual([{ from: 1, to: 120 }]);
    // flashindex_db_size_bytes reads this: bytes on disk, grown by the rows.
    expect(emptySize).toBeGreaterThan(0);
    expect(await store.sizeBytes()).toBeGreaterThan(emptySize);
    const raw = await backend.reader(config.database as Config["database"]);
    open.push(raw);
    const [stored] = await raw.all<{ logs: number; transfers: number }>(
      "SELECT (SELECT COUNT(*) FROM logs) AS logs, (SELECT COUNT(*) FROM transfers) AS transfers",
    );
    expect({ logs: Number(stored!.logs), transfers: Number(stored!.transfers) }).toEqual({
      logs: 3_000,
      transfers: 3_000,
    });

    // The same window again: nothing doubled.
    const again = store.openWindowWriter({ bulk: false });
    expect(await again.commit(window(41, 80, 25), 2)).toMatchObject({
      inserted: 0,
      duplicates: 1_000,
    });
    await again.close();
  });

  test("a window holding logs already stored, or one log twice, stores the others once with their transfers", async () => {
    // On Postgres the bulk COPY cannot skip a stored log: it steps back and stores the window with the statement that can.
    const config = testConfig({
      rpc: { http: ["http://127.0.0.1:9"] },
      database: await backend.freshDatabase(),
    });
    const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
    open.push(store);
    const writer = store.openWindowWriter({ bulk: false });
    expect(await writer.commit(window(21, 40, 5), 1)).toMatchObject({
      inserted: 100,
      duplicates: 0,
    });
    expect(await writer.commit(window(1, 40, 5), 1)).toMatchObject({
      inserted: 100,
      duplicates: 100,
    });
    const twice = windowRows(41, 50, 5);
    expect(
      await writer.commit({ ...window(41, 50, 5), rows: packRows([...twice, twice[7]!]) }, 1),
    ).toMatchObject({ inserted: 50, duplicates: 1 });
    await writer.close();
    expect(await store.syncedRanges(TOKEN)).toEqual([{ from: 1, to: 50 }]);
    const raw = await backend.reader(config.database as Config["database"]);
    open.push(raw);
    const [stored] = await raw.all<{ logs: number; transfers: number; orphans: number }>(
      `SELECT (SELECT COUNT(*) FROM logs) AS logs, (SELECT COUNT(*) FROM transfers) AS transfers,
              (SELECT COUNT(*) FROM transfers t LEFT JOIN logs l ON l.id = t.log_id WHERE l.id IS NULL OR l.tx_hash <> t.tx_hash) AS orphans`,
    );
    expect({
      logs: Number(stored!.logs),
      transfers: Number(stored!.transfers),
      orphans: Number(stored!.orphans),
    }).toEqual({ logs: 250, transfers: 250, orphans: 0 });
  });

  test("a window's owed blocks are recorded with its range, staged or not, on the writer thread too, and paid in one transaction", async () => {
    const config = testConfig({
      rpc: { http: ["http://127.0.0.1:9"] },
      database: await backend.freshDatabase(),
    });
    const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
    open.push(store);
    const owedOf = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i): [number, Hex] => [
        from + i,
        word(`b${(from + i).toString(16)}`),
      ]);
    const writer = store.openWindowWriter({ bulk: true });
    await writer.commit({ ...window(1, 10, 3), owed: owedOf(1, 10), stageAttribution: true }, 5);
    await writer.commit({ ...window(11, 20, 3), owed: owedOf(11, 20) }, 6);
    // A window fetched again after a crash owes its blocks again: nothing doubled.
    await writer.commit({ ...window(11, 20, 3), owed: owedOf(11, 20) }, 7);
    await writer.close();
    expect(await store.owedAttribution.count()).toBe(20);
    const first = await store.owedAttribution.next(3);
    expect(first).toEqual(
      [1, 2, 3].map((n) => ({
        number: n,
        hash: word(`b${n.toString(16)}`),
        txHashes: [0, 1, 2].map((i) => word(`7${(n * 100 + i).toString(16)}`)),
      })),
    );
    const raw = await backend.reader(config.database as Config["database"]);
    open.push(raw);
    const [listed] = await raw.all<{ n: number }>(
      "SELECT COUNT(*) AS n FROM owed_attribution_transfers",
    );
    expect(Number(listed!.n)).toBe(60);

    // Block 2 reorged out: its logs flagged, it owes no transaction any more.
    await store.applyChainChange(
      { kind: "reorg", orphaned: [{ number: 2, hash: first[1]!.hash }], blocks: [], synced: [] },
      8,
    );
    expect((await store.owedAttribution.next(3))[1]).toEqual({
      number: 2,
      hash: first[1]!.hash,
      txHashes: [],
    });
    await store.owedAttribution.pay(first, { batches: [] });
    expect(await store.owedAttribution.count()).toBe(17);
    expect((await store.owedAttribution.next(1))[0]!.number).toBe(4);
  });

  test.runIf(backend.name === "postgres")(
    "a connection cut in the middle of a window's COPY stores nothing of it and is an outage (exit 75)",
    async () => {
      const config = testConfig({
        rpc: { http: ["http://127.0.0.1:9"] },
        database: await backend.freshDatabase(),
      });
      const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
      open.push(store);
      const raw = await backend.reader(config.database as Config["database"]);
      open.push(raw);
      const writer = store.openWindowWriter({ bulk: true });
      const big = window(1, 4_000, 50);
      const committing = writer.commit(big, 1).then(
        () => undefined,
        (error: unknown) => error,
      );
      // Cut the store's connection once its COPY is under way.
      await waitFor(
        async () =>
          (
            await raw.all(
              "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY logs%' AND pid <> pg_backend_pid()",
            )
          ).length > 0 || undefined,
        20_000,
        "the COPY",
      );
      await raw.all(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY logs%' AND pid <> pg_backend_pid()",
      );
      const error = await committing;
      expect(error).toBeInstanceOf(RetryableError);
      expect((error as RetryableError).exitCode).toBe(75);
      await writer.close();
      const [stored] = await raw.all<{ logs: number; ranges: number }>(
        "SELECT (SELECT COUNT(*) FROM logs) AS logs, (SELECT COUNT(*) FROM synced_ranges) AS ranges",
      );
      expect({ logs: Number(stored!.logs), ranges: Number(stored!.ranges) }).toEqual({
        logs: 0,
        ranges: 0,
      });
    },
    60_000,
  );
});
