import { afterEach, describe, expect, test } from "vitest";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import type { Database } from "../../src/store/sqlite/openDatabase.js";
import { createPayer, waitFor } from "../helpers/devnetPayments.js";
import { startFollower, type FollowerOptions, type Row } from "../helpers/followerHarness.js";
import { connectWsRpc } from "../helpers/wsRpcClient.js";

/** Consumer tests for the ways a Base Flashblocks node differs from a plain chain (base/base crates/execution/flashblocks). */

const ZERO = `0x${"0".repeat(64)}`;
const SHOP = "0x000000000000000000000000000000000000c0de";
const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
const setUp = (options: FollowerOptions = {}) => startFollower(options, open);

type Payer = ReturnType<typeof createPayer>;
const rowsOf = (db: Database, tx: string) =>
  db
    .prepare("SELECT * FROM logs WHERE tx_hash = ? ORDER BY log_index")
    .all(tx.toLowerCase()) as Row[];
const head = async (payer: Payer) => Number(await payer.rpc<string>("eth_blockNumber"));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function canonicalLogs(devnet: Devnet, payer: Payer): Promise<string[]> {
  const logs = await payer.rpc<Array<{ blockHash: string; logIndex: string }>>("eth_getLogs", [
    { fromBlock: "0x0", toBlock: "latest", address: devnet.token, topics: [[...PAYMENT_TOPICS]] },
  ]);
  return logs.map((l) => `${l.blockHash}:${Number(l.logIndex)}`).sort();
}
function liveLogs(db: Database): string[] {
  return (
    db
      .prepare("SELECT block_hash, log_index FROM logs WHERE status IN ('confirmed', 'finalized')")
      .all() as Row[]
  )
    .map((r) => `${r.block_hash}:${r.log_index}`)
    .sort();
}
/** Every stored row is live and the live rows are exactly the chain's logs. */
async function caughtUp(db: Database, devnet: Devnet, payer: Payer): Promise<void> {
  await waitFor(
    async () => liveLogs(db).join() === (await canonicalLogs(devnet, payer)).join(),
    10_000,
    "live rows equal the chain's logs",
  );
  expect(
    db
      .prepare("SELECT COUNT(*) AS n FROM logs WHERE status NOT IN ('confirmed', 'finalized')")
      .get(),
  ).toEqual({ n: 0 });
}
async function droppedCount(deps: Awaited<ReturnType<typeof setUp>>["deps"]): Promise<number> {
  return (await deps.metrics.droppedPreconfirmed.get()).values.reduce((n, v) => n + v.value, 0);
}

describe("following a Base Flashblocks node", () => {
  test("with the canonical chain a block behind the pending view, a canonical block's stale pre-confirmed logs are not stored again and nothing is dropped", async () => {
    const { db, devnet, payer, deps } = await setUp();
    const before = await head(payer);
    await payer.rpc("devnet_setPendingLag", [1]);
    const first = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_flashblock");
    await payer.rpc("devnet_mine"); // block before+1 sealed; the canonical chain stays behind
    const second = await payer.pay(SHOP, 1);
    await payer.rpc("devnet_flashblock");
    await waitFor(
      () => rowsOf(db, first).length === 2 && rowsOf(db, second).length === 1,
      5_000,
      "pre-confirmed rows of two pending blocks",
    );
    expect(
      [...rowsOf(db, first), ...rowsOf(db, second)].map((r) => [r.status, r.block_number]),
    ).toEqual([
      ["preconfirmed", before + 1],
      ["preconfirmed", before + 1],
      ["preconfirmed", before + 2],
    ]);

    await payer.rpc("devnet_mine"); // block before+1 becomes canonical; the pending view still shows its logs
    const receipt = await payer.publicClient.getTransactionReceipt({ hash: first });
    await waitFor(
      () => rowsOf(db, first).every((r) => r.status === "confirmed"),
      5_000,
      "promotion",
    );
    await pause(300); // several polls of a pending view that still holds block before+1
    expect(rowsOf(db, first).map((r) => [r.status, r.block_hash, r.removed_at])).toEqual([
      ["confirmed", receipt.blockHash, null],
      ["confirmed", receipt.blockHash, null],
    ]);
    expect(rowsOf(db, second).map((r) => r.status)).toEqual(["preconfirmed"]);

    await payer.rpc("devnet_setPendingLag", [0]);
    await payer.rpc("devnet_mine");
    await caughtUp(db, devnet, payer);
    expect(
      rowsOf(db, second).map((r) => [r.status, r.block_number, r.preconfirmed_at !== null]),
    ).toEqual([["confirmed", before + 2, true]]);
    expect(await droppedCount(deps)).toBe(0);
  });

  test("a pending view emptied in the middle of a block retracts nothing: its pre-confirmations are promoted when the block comes", async () => {
    const { db, devnet, payer, deps } = await setUp();
    const other = createPayer(devnet, 2);
    const seen = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_flashblock");
    await waitFor(() => rowsOf(db, seen).length === 2, 5_000, "pre-confirmed rows");
    await payer.rpc("devnet_clearPending");
    const unseen = await other.pay(SHOP, 1);
    await payer.rpc("devnet_flashblock");
    await pause(300); // several polls of an empty pending view
    expect(rowsOf(db, seen).map((r) => r.status)).toEqual(["preconfirmed", "preconfirmed"]);
    expect(rowsOf(db, unseen)).toEqual([]);

    await payer.rpc("devnet_mine");
    await caughtUp(db, devnet, payer);
    expect(rowsOf(db, seen).every((r) => r.preconfirmed_at !== null && r.block_hash !== ZERO)).toBe(
      true,
    );
    expect(rowsOf(db, unseen).map((r) => [r.status, r.preconfirmed_at])).toEqual([
      ["confirmed", null],
    ]);
    expect(await droppedCount(deps)).toBe(0);
  });

  test("a pre-confirmation that lands a block later than announced ends as one confirmed row per log, never counted dropped", async () => {
    const { db, devnet, payer, deps } = await setUp();
    const other = createPayer(devnet, 2);
    const before = await head(payer);
    const kept = await payer.pay(SHOP, 1);
    const late = await other.pay(SHOP, 2);
    await payer.rpc("devnet_flashblock");
    await waitFor(() => rowsOf(db, late).length === 2, 5_000, "pre-confirmed rows");
    const announcedAt = rowsOf(db, late).map((r) => r.preconfirmed_at);
    await payer.rpc("devnet_deferPreconfirmed", [late]);

    await payer.rpc("devnet_mine"); // block before+1 without `late`; the rebuilt pending block before+2 holds it
    await waitFor(
      () => rowsOf(db, kept)[0]?.status === "confirmed",
      5_000,
      "the kept payment confirmed",
    );
    await waitFor(
      () =>
        rowsOf(db, late).every((r) => r.status === "preconfirmed" && r.block_number === before + 2),
      5_000,
      "re-announced for the next block",
    );
    expect(rowsOf(db, late)).toHaveLength(2);

    await payer.rpc("devnet_mine");
    const receipt = await payer.publicClient.getTransactionReceipt({ hash: late });
    expect(Number(receipt.blockNumber)).toBe(before + 2);
    await caughtUp(db, devnet, payer);
    const rows = rowsOf(db, late);
    expect(rows.map((r) => [r.status, r.block_hash, r.block_number, r.removed_at])).toEqual([
      ["confirmed", receipt.blockHash, before + 2, null],
      ["confirmed", receipt.blockHash, before + 2, null],
    ]);
    expect(rows.map((r) => r.log_index)).toEqual(receipt.logs.map((l) => l.logIndex));
    // The lead time runs from the first announcement.
    expect(rows.map((r) => r.preconfirmed_at)).toEqual(announcedAt);
    expect(await droppedCount(deps)).toBe(0);
    const moved = (await deps.metrics.movedPreconfirmed.get()).values.map((v) => [
      v.labels.from,
      v.value,
    ]);
    expect(moved).toEqual([
      ["preconfirmed", 2],
      ["dropped", 0],
    ]);
  });

  test("with newFlashblocks served to another client on the same node, flashindex's pendingLogs path stays exact: pre-confirmed, then promoted, nothing dropped", async () => {
    const { db, devnet, payer, deps } = await setUp();
    const watcher = await connectWsRpc(devnet.wsUrl);
    open.push({ stop: async () => watcher.close() });
    const flashblocks = await watcher.subscribe("newFlashblocks");
    const before = await head(payer);
    const tx = await payer.pay(SHOP, 3);
    await payer.rpc("devnet_flashblock");
    await payer.rpc("devnet_flashblock");
    await waitFor(() => rowsOf(db, tx).length === 3, 5_000, "pre-confirmed rows");
    expect(rowsOf(db, tx).map((r) => [r.status, r.block_hash, r.block_number])).toEqual(
      Array(3).fill(["preconfirmed", ZERO, before + 1]),
    );
    await flashblocks.waitFor((results) => results.length >= 2);
    const blocks = flashblocks.results as Array<{
      hash: string;
      number: string;
      transactions: Array<{ hash: string }>;
    }>;
    expect(blocks.every((b) => b.hash === ZERO && Number(b.number) === before + 1)).toBe(true);
    expect(blocks.at(-1)!.transactions.map((t) => t.hash)).toContain(tx);

    await payer.rpc("devnet_mine");
    await waitFor(() => rowsOf(db, tx).every((r) => r.status === "confirmed"), 5_000, "promotion");
    await caughtUp(db, devnet, payer);
    expect(await droppedCount(deps)).toBe(0);
  });
});
