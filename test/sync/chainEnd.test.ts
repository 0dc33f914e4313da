import type { Address, Hex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PRECONFIRMED_BLOCK_HASH } from "../../src/rows/rpcLog.js";
import { type LogStatus } from "../../src/rows/logRow.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { rewindToChainEnd } from "../../src/sync/historical/rewindToChainEnd.js";
import {
  BACKENDS,
  stopFileBackends,
  type TableReader,
  type TestBackend,
} from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { word } from "../helpers/fixtures.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const NOW = 1_700_000_000_000;

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

async function freshStore(backend: TestBackend) {
  const config = testConfig({
    rpc: { http: ["http://127.0.0.1:9"] },
    database: await backend.freshDatabase(),
  });
  const deps = testDeps(config);
  const store = await openStore(config, { metrics: deps.metrics });
  open.push(store);
  const raw = await backend.reader(config.database);
  open.push(raw);
  return { deps: { ...deps, store }, store, raw };
}

/** One Transfer of transaction `tx` in `block`, as the store takes it. */
function transfer(tx: string, block: number, status: LogStatus) {
  const log = {
    address: TOKEN,
    blockNumber: block,
    blockHash: status === "preconfirmed" ? PRECONFIRMED_BLOCK_HASH : word(`b${block}`),
    blockTimestamp: 1_700_000_000,
    transactionHash: word(tx),
    transactionIndex: 0,
    logIndex: 0,
    removed: false,
    topics: [TRANSFER_TOPIC, word("a11ce"), word("5409")] as [Hex, ...Hex[]],
    data: word("f4240"),
  };
  return toLogRows([log], {
    chainId: 8453,
    statusOf: () => status,
    source: status === "preconfirmed" ? "pending" : "head",
    timestampOf: () => 0,
  }).rows;
}

/** Blocks 0..12 indexed: logs in blocks 5 (finalized), 8 (finalized), 12 (confirmed); a pre-confirmation for block 13. */
async function indexThrough12(store: Store): Promise<void> {
  await store.applyChainChange(
    {
      kind: "head_block",
      orphaned: [],
      blocks: [
        { number: 5, rows: transfer("c5", 5, "finalized") },
        { number: 8, rows: transfer("c8", 8, "finalized") },
        { number: 12, rows: transfer("c12", 12, "confirmed") },
      ],
      synced: [{ token: TOKEN, range: { from: 0, to: 12 } }],
    },
    NOW,
  );
  await store.insertPreconfirmed(transfer("c13", 13, "preconfirmed"), NOW);
}

const statuses = (raw: TableReader) =>
  raw.all<{ block_number: number; status: string }>(
    "SELECT block_number, status FROM logs ORDER BY block_number",
  );

describe.each(BACKENDS)("rewindToChainEnd() on $name", (backend) => {
  test("flags removed the live rows above a chain that ends lower, finalized ones included, and cuts the synced ranges there", async () => {
    const { deps, store, raw } = await freshStore(backend);
    await indexThrough12(store);

    expect(await store.liveBlocksAbove(7)).toEqual([
      { number: 8, hash: word("b8") },
      { number: 12, hash: word("b12") },
    ]);
    expect(await rewindToChainEnd(deps, 7)).toBe(2);

    expect((await statuses(raw)).map((r) => [Number(r.block_number), r.status])).toEqual([
      [5, "finalized"],
      [8, "removed"],
      [12, "removed"],
      // A pre-confirmation is not a block's row: the blocks above 7, made again, land or drop it.
      [13, "preconfirmed"],
    ]);
    expect(await store.syncedRanges(TOKEN)).toEqual([{ from: 0, to: 7 }]);
    expect(await store.checkpoint(TOKEN, 0)).toBe(7);
    expect(
      deps.lines.find((l) => l.msg === "Flagged removed the rows above the chain's end"),
    ).toMatchObject({ chain_head: 7, indexed_to_block: 12, removed_logs: 2, blocks_with_logs: 2 });
    expect(
      (await deps.metrics.registry.getSingleMetric("flashindex_reorg_removed_logs_total")?.get())
        ?.values,
    ).toEqual([expect.objectContaining({ labels: { via: "restart_check" }, value: 2 })]);
  });

  test("does nothing when the chain ends at or above every indexed block, and cuts ranges above empty blocks too", async () => {
    const { deps, store, raw } = await freshStore(backend);
    await indexThrough12(store);
    expect(await rewindToChainEnd(deps, 12)).toBe(0);
    expect(await rewindToChainEnd(deps, 40)).toBe(0);
    expect(await store.syncedRanges(TOKEN)).toEqual([{ from: 0, to: 12 }]);
    expect(deps.lines.some((l) => l.msg === "Flagged removed the rows above the chain's end")).toBe(
      false,
    );

    // Blocks 13..20 held none of our logs: nothing to flag, but they must be read again from the shorter chain.
    await store.applyChainChange(
      {
        kind: "head_block",
        orphaned: [],
        blocks: [],
        synced: [{ token: TOKEN, range: { from: 13, to: 20 } }],
      },
      NOW,
    );
    expect(await rewindToChainEnd(deps, 15)).toBe(0);
    expect(await store.syncedRanges(TOKEN)).toEqual([{ from: 0, to: 15 }]);
    expect((await statuses(raw)).filter((r) => r.status === "removed")).toEqual([]);
  });
});
