import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { type LogStatus } from "../../src/rows/logRow.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createSqliteLifecycle } from "../../src/store/sqlite/lifecycle.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { word } from "../helpers/fixtures.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ZERO = word("0");
const TX = word("ab1");
const OTHER_TX = word("ab2");

/** One Transfer of `TX` as a node reports it at `blockNumber` (zero hash while pre-confirmed). */
function transfer(blockNumber: number, logIndex: number, status: LogStatus, transactionHash = TX) {
  const log: RpcLog = {
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word("a11ce"), word("b0b")],
    data: word("f4240"),
    blockNumber,
    blockHash: status === "preconfirmed" ? ZERO : word(`b${blockNumber}`),
    blockTimestamp: 1_700_000_000 + blockNumber,
    transactionHash,
    transactionIndex: logIndex,
    logIndex,
    removed: false,
  };
  return toLogRows([log], {
    chainId: 8453,
    statusOf: () => status,
    source: status === "preconfirmed" ? "pending" : "head",
    timestampOf: () => 0,
  }).rows;
}

function setUp() {
  const db = openDatabase(
    join(mkdtempSync(join(tmpdir(), "flashindex-lifecycle-")), "test.db"),
    8453,
  );
  const lifecycle = createSqliteLifecycle(db);
  const rows = () =>
    db
      .prepare(
        "SELECT status, block_number, log_index, block_hash, removed_at, preconfirmed_at FROM logs ORDER BY id",
      )
      .all() as Array<Record<string, unknown>>;
  return { db, lifecycle, rows };
}

describe("lifecycle of a pre-confirmation announced again for a later block", () => {
  test("a row marked dropped is revived by the later announcement, a stale re-read of the earlier block is ignored, and its block promotes it", () => {
    const { lifecycle, rows } = setUp();
    expect(lifecycle.insertPreconfirmed(transfer(11, 3, "preconfirmed"), 1_000)).toMatchObject({
      inserted: 1,
      moved: 0,
    });
    expect(lifecycle.applyCanonicalBlock(11, [], 2_000).dropped).toBe(1);
    expect(rows()).toMatchObject([{ status: "dropped", block_number: 11, removed_at: 2_000 }]);

    expect(lifecycle.insertPreconfirmed(transfer(12, 0, "preconfirmed"), 3_000)).toMatchObject({
      inserted: 0,
      moved: 1,
      revived: 1,
    });
    expect(rows()).toEqual([
      {
        status: "preconfirmed",
        block_number: 12,
        log_index: 0,
        block_hash: ZERO,
        removed_at: null,
        preconfirmed_at: 1_000,
      },
    ]);
    expect(lifecycle.insertPreconfirmed(transfer(11, 3, "preconfirmed"), 4_000)).toMatchObject({
      inserted: 0,
      moved: 0,
    });
    expect(rows()).toHaveLength(1);

    const applied = lifecycle.applyCanonicalBlock(12, transfer(12, 0, "confirmed"), 5_000);
    expect(applied).toMatchObject({ promoted: 1, inserted: 0, dropped: 0, leadTimesMs: [4_000] });
    expect(rows()).toEqual([
      {
        status: "confirmed",
        block_number: 12,
        log_index: 0,
        block_hash: word("b12"),
        removed_at: null,
        preconfirmed_at: 1_000,
      },
    ]);
  });

  test("a pre-confirmation the pending view still holds for a later block is not dropped with its block; the next block settles it", () => {
    const { lifecycle, rows } = setUp();
    lifecycle.insertPreconfirmed(
      [...transfer(11, 0, "preconfirmed"), ...transfer(11, 1, "preconfirmed", OTHER_TX)],
      1_000,
    );
    expect(lifecycle.preconfirmedThrough(11)).toEqual(new Set([TX, OTHER_TX]));
    expect(lifecycle.applyCanonicalBlock(11, [], 2_000, new Set([TX])).dropped).toBe(1);
    expect(rows().map((r) => r.status)).toEqual(["preconfirmed", "dropped"]);
    // Never announced again and absent from block 12: dropped then.
    expect(lifecycle.applyCanonicalBlock(12, [], 3_000).dropped).toBe(1);
    expect(rows().map((r) => r.status)).toEqual(["dropped", "dropped"]);
  });
});

describe("lifecycle of a pre-confirmation of a log already settled", () => {
  test("a late announcement of a confirmed or finalized log is old news; while a bulk load has dropped logs_by_tx, a finalized one is not looked up (and nothing scans)", () => {
    const { db, lifecycle, rows } = setUp();
    lifecycle.applyCanonicalBlock(11, transfer(11, 0, "confirmed"), 1_000);
    expect(lifecycle.insertPreconfirmed(transfer(12, 0, "preconfirmed"), 2_000)).toMatchObject({
      inserted: 0,
      moved: 0,
    });

    lifecycle.finalizeThrough(11, 3_000);
    expect(lifecycle.insertPreconfirmed(transfer(12, 0, "preconfirmed"), 4_000)).toMatchObject({
      inserted: 0,
      moved: 0,
    });
    expect(rows()).toMatchObject([{ status: "finalized", block_number: 11 }]);

    const forgetPreconfirmed = () => {
      db.exec(
        "DELETE FROM transfers WHERE log_id IN (SELECT id FROM logs WHERE status = 'preconfirmed')",
      );
      db.exec("DELETE FROM logs WHERE status = 'preconfirmed'");
    };
    db.exec("DROP INDEX logs_by_tx");
    expect(lifecycle.insertPreconfirmed(transfer(12, 0, "preconfirmed"), 5_000)).toMatchObject({
      inserted: 1,
    });
    forgetPreconfirmed();
    // Refused once, the lookup stays off (no prepare per row) until the store says the indexes are built.
    db.exec("CREATE INDEX logs_by_tx ON logs (tx_hash)");
    expect(lifecycle.insertPreconfirmed(transfer(12, 0, "preconfirmed"), 6_000)).toMatchObject({
      inserted: 1,
    });
    forgetPreconfirmed();
    lifecycle.readerIndexesBuilt();
    expect(lifecycle.insertPreconfirmed(transfer(13, 0, "preconfirmed"), 7_000)).toMatchObject({
      inserted: 0,
    });
    expect(rows()).toMatchObject([{ status: "finalized", block_number: 11 }]);
  });
});

describe("the SQLite store's finalized-twin lookup across a bulk load", () => {
  test("once refused for a missing logs_by_tx, it looks finalized rows up again after the store builds the reader indexes, one per turn of the event loop", async () => {
    const { db, lifecycle } = setUp();
    const store = createSqliteStore({
      db,
      chainId: 8453,
      metrics: createMetrics({ defaultMetrics: false }),
    });
    lifecycle.applyCanonicalBlock(11, transfer(11, 0, "confirmed"), 1_000);
    lifecycle.applyCanonicalBlock(12, transfer(12, 0, "confirmed", OTHER_TX), 1_000);
    lifecycle.finalizeThrough(12, 2_000);

    await store.readerIndexes.drop();
    expect(await store.insertPreconfirmed(transfer(13, 0, "preconfirmed"), 3_000)).toMatchObject({
      inserted: 1,
    });
    // The build yields to the event loop between indexes: a live message waits for one index, not all six.
    const building = store.readerIndexes.build();
    await new Promise((resolve) => setImmediate(resolve));
    expect((await store.readerIndexes.missing()).length).toBeGreaterThan(0);
    expect(await building).toEqual([
      "transfers_by_token_block",
      "transfers_by_from",
      "transfers_by_to",
      "logs_by_tx",
      "authorization_events_by_tx",
      "attribution_codes_by_code",
    ]);
    expect(await store.readerIndexes.missing()).toEqual([]);
    expect(
      await store.insertPreconfirmed(transfer(13, 0, "preconfirmed", OTHER_TX), 4_000),
    ).toMatchObject({ inserted: 0 });
  });
});
