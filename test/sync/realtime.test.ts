import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { FatalError, ShutdownError } from "../../src/errors/base.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import { BACKENDS, stopFileBackends, type TableReader } from "../helpers/backends.js";
import { createPayer, waitFor } from "../helpers/devnetPayments.js";
import { startFollower, type FollowerOptions, type Row } from "../helpers/followerHarness.js";
import { startScriptedWsServer } from "../helpers/scriptedWsServer.js";

const ZERO = `0x${"0".repeat(64)}`;
const SHOP = "0x000000000000000000000000000000000000c0de";
const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
afterAll(() => stopFileBackends());

const rowsOf = (db: TableReader, tx: string) =>
  db.all<Row>("SELECT * FROM logs WHERE tx_hash = ? ORDER BY id", [tx.toLowerCase()]);
const head = async (payer: ReturnType<typeof createPayer>) =>
  Number(await payer.rpc<string>("eth_blockNumber"));

/** The chain's own logs of the token over all blocks, for row-by-row comparison with the live rows. */
async function canonicalLogs(
  devnet: Devnet,
  payer: ReturnType<typeof createPayer>,
): Promise<string[]> {
  const logs = await payer.rpc<Array<{ blockHash: string; logIndex: string }>>("eth_getLogs", [
    { fromBlock: "0x0", toBlock: "latest", address: devnet.token, topics: [[...PAYMENT_TOPICS]] },
  ]);
  return logs.map((l) => `${l.blockHash}:${Number(l.logIndex)}`).sort();
}
async function liveLogs(db: TableReader): Promise<string[]> {
  return (
    await db.all<Row>(
      "SELECT block_hash, log_index FROM logs WHERE status IN ('confirmed', 'finalized')",
    )
  )
    .map((r) => `${r.block_hash}:${r.log_index}`)
    .sort();
}

describe.each(BACKENDS)("realtime on $name", (backend) => {
  // Each follower reads its rows through `db`, a reader of whichever backend it writes.
  const setUp = async (options: FollowerOptions = {}) => {
    const follower = await startFollower({ ...options, backend }, open);
    return { ...follower, db: follower.reader };
  };

  test("a pre-confirmed log is stored before its block is mined, then promoted with the real block hash", async () => {
    const { db, payer, deps } = await setUp();
    const before = await head(payer);
    const tx = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_flashblock");
    const pre = await waitFor(
      async () => (await rowsOf(db, tx)).length === 2 && (await rowsOf(db, tx)),
      5_000,
      "pre-confirmed rows",
    );
    expect(await head(payer)).toBe(before);
    expect(pre.map((r) => [r.status, r.block_hash, r.block_number])).toEqual([
      ["preconfirmed", ZERO, before + 1],
      ["preconfirmed", ZERO, before + 1],
    ]);
    expect(
      (await db.all("SELECT COUNT(*) AS n FROM live_transfers WHERE tx_hash = ?", [tx]))[0],
    ).toEqual({ n: 2 });

    await payer.rpc("devnet_mine");
    const receipt = await payer.publicClient.getTransactionReceipt({ hash: tx });
    const confirmed = await waitFor(
      async () =>
        (await rowsOf(db, tx)).every((r) => r.status === "confirmed") && (await rowsOf(db, tx)),
      5_000,
      "promotion",
    );
    expect(confirmed).toHaveLength(2);
    expect(confirmed.map((r) => r.block_hash)).toEqual([receipt.blockHash, receipt.blockHash]);
    expect(confirmed.map((r) => r.log_index)).toEqual(receipt.logs.map((l) => l.logIndex));
    for (const row of confirmed)
      expect(row.confirmed_at).toBeGreaterThanOrEqual(row.preconfirmed_at!);
    expect(await db.all("SELECT status FROM transfers WHERE tx_hash = ?", [tx])).toEqual([
      { status: "confirmed" },
      { status: "confirmed" },
    ]);
    const leadTimes = (await deps.metrics.preconfirmationLeadTime.get()).values.find((v) =>
      v.metricName?.endsWith("_count"),
    );
    expect(leadTimes?.value).toBe(2);
  });

  test("a pre-confirmation that never lands is kept and marked dropped", async () => {
    const { db, payer } = await setUp();
    const tx = await payer.pay(SHOP);
    await payer.rpc("devnet_flashblock");
    await waitFor(
      async () => (await rowsOf(db, tx))[0]?.status === "preconfirmed",
      5_000,
      "pre-confirmed row",
    );
    await payer.rpc("devnet_dropPreconfirmed", [tx]);
    await payer.rpc("devnet_mine");
    const [row] = await waitFor(
      async () => (await rowsOf(db, tx))[0]?.status === "dropped" && (await rowsOf(db, tx)),
      5_000,
      "dropped row",
    );
    expect(row!.removed_at).not.toBeNull();
    expect(
      (await db.all("SELECT COUNT(*) AS n FROM live_transfers WHERE tx_hash = ?", [tx]))[0],
    ).toEqual({ n: 0 });
  });

  test.each([1, 5])(
    "a reorg of depth %i flags the orphaned rows removed and indexes the new branch",
    async (depth) => {
      const { db, devnet, payer } = await setUp({ finalityDepth: 20 });
      const txs = [];
      for (let i = 0; i < depth; i++) {
        txs.push(await payer.pay(SHOP, 1 + i));
        await payer.rpc("devnet_mine");
      }
      const tip = await head(payer);
      await waitFor(
        async () => (await liveLogs(db)).join() === (await canonicalLogs(devnet, payer)).join(),
        5_000,
        "blocks indexed",
      );
      const orphanedHashes = new Set<string>();
      for (const tx of txs) for (const r of await rowsOf(db, tx)) orphanedHashes.add(r.block_hash);

      await payer.rpc("devnet_reorg", [depth]);
      await payer.rpc("devnet_mine");
      await waitFor(
        async () => (await liveLogs(db)).join() === (await canonicalLogs(devnet, payer)).join(),
        10_000,
        "new branch indexed",
      );
      expect(await head(payer)).toBe(tip + 1);
      for (const tx of txs) {
        const rows = await rowsOf(db, tx);
        const removed = rows.filter((r) => r.status === "removed");
        const live = rows.filter((r) => r.status === "confirmed");
        expect(removed.length).toBeGreaterThan(0);
        expect(
          removed.every((r) => orphanedHashes.has(r.block_hash) && r.removed_at !== null),
        ).toBe(true);
        expect(live.length).toBe(removed.length);
        expect(live.every((r) => !orphanedHashes.has(r.block_hash))).toBe(true);
      }
    },
  );

  test("a reorg deeper than the tracked blocks stops the follower with a fatal error", async () => {
    const { payer, outcome } = await setUp({ finalityDepth: 2, pendingPoll: 0 });
    for (let i = 0; i < 4; i++) await payer.rpc("devnet_mine");
    await new Promise((resolve) => setTimeout(resolve, 300));
    await payer.rpc("devnet_reorg", [4]);
    await payer.rpc("devnet_mine");
    const error = await outcome;
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).shortMessage).toMatch(/Reorg deeper than/);
  });

  test.each(["single", "array"] as const)(
    "indexes pendingLogs notifications of the %s shape, and repeated flashblocks change nothing",
    async (shape) => {
      const { db, payer } = await setUp({ pendingPoll: 0 });
      await payer.rpc("devnet_setPendingLogsMode", [{ shape, repeat: true }]);
      const tx = await payer.pay(SHOP, 3);
      await payer.rpc("devnet_flashblock");
      const tx2 = await payer.pay(SHOP, 2);
      await payer.rpc("devnet_flashblock");
      await waitFor(
        async () => (await rowsOf(db, tx)).length === 3 && (await rowsOf(db, tx2)).length === 2,
        5_000,
        "pre-confirmed rows",
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await rowsOf(db, tx)).map((r) => [r.source, r.status])).toEqual(
        Array(3).fill(["pending_ws", "preconfirmed"]),
      );
      expect(await rowsOf(db, tx2)).toHaveLength(2);
      await payer.rpc("devnet_mine");
      await waitFor(
        async () =>
          [...(await rowsOf(db, tx)), ...(await rowsOf(db, tx2))].every(
            (r) => r.status === "confirmed",
          ),
        5_000,
        "promotion",
      );
      expect(await rowsOf(db, tx)).toHaveLength(3);
    },
  );

  test("survives a WebSocket disconnect without losing a log", async () => {
    const { db, devnet, payer } = await setUp({ pendingPoll: 0 });
    for (let i = 0; i < 3; i++) {
      await payer.pay(SHOP, 2);
      await payer.rpc("devnet_flashblock");
      if (i === 1) await payer.rpc("devnet_disconnectWebSockets");
    }
    await payer.rpc("devnet_mine");
    await payer.pay(SHOP, 1);
    await payer.rpc("devnet_mine");
    await waitFor(
      async () => (await liveLogs(db)).join() === (await canonicalLogs(devnet, payer)).join(),
      10_000,
      "all logs confirmed",
    );
  });

  test("a restart in the middle of realtime settles rows of blocks reorged out while it was down", async () => {
    const first = await setUp({ finalityDepth: 20 });
    const tx = await first.payer.pay(SHOP, 2);
    await first.payer.rpc("devnet_mine");
    await waitFor(
      async () =>
        (await rowsOf(first.db, tx)).length === 2 &&
        (await rowsOf(first.db, tx)).every((r) => r.status === "confirmed"),
      5_000,
      "confirmed",
    );
    const oldHash = (await rowsOf(first.db, tx))[0]!.block_hash;
    await first.stop();

    await first.payer.rpc("devnet_reorg", [1]);
    await first.payer.rpc("devnet_mine");
    const second = await setUp({
      finalityDepth: 20,
      devnet: first.devnet,
      database: { ...first.config.database },
    });
    await waitFor(
      async () =>
        (await liveLogs(second.db)).join() ===
        (await canonicalLogs(second.devnet, second.payer)).join(),
      10_000,
      "settled",
    );
    const rows = await rowsOf(second.db, tx);
    expect(rows.filter((r) => r.status === "removed").map((r) => r.block_hash)).toEqual([
      oldHash,
      oldHash,
    ]);
    expect(rows.filter((r) => r.status === "confirmed")).toHaveLength(2);
  });

  test("honours removed: true from the logs subscription, and shrugs off garbage messages", async () => {
    const ws = await startScriptedWsServer();
    open.push(ws);
    const { db, payer, deps } = await setUp({ wsUrl: ws.url, pendingPoll: 0 });
    const tx = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_mine");
    const rows = await waitFor(
      async () =>
        (await rowsOf(db, tx)).length === 2 &&
        (await rowsOf(db, tx)).every((r) => r.status === "confirmed") &&
        (await rowsOf(db, tx)),
      5_000,
      "confirmed",
    );
    await waitFor(async () => ws.subscribed("logs"), 5_000, "logs subscription");
    ws.sendRaw("not json");
    ws.notify("logs", { garbage: true });
    const receipt = await payer.publicClient.getTransactionReceipt({ hash: tx });
    const log = receipt.logs[1]!;
    ws.notify("logs", {
      address: log.address,
      topics: log.topics,
      data: log.data,
      blockNumber: `0x${log.blockNumber.toString(16)}`,
      blockHash: log.blockHash,
      transactionHash: log.transactionHash,
      transactionIndex: `0x${log.transactionIndex.toString(16)}`,
      logIndex: `0x${log.logIndex.toString(16)}`,
      removed: true,
    });
    await waitFor(
      async () => (await rowsOf(db, tx))[1]?.status === "removed",
      5_000,
      "removed flag honoured",
    );
    expect((await rowsOf(db, tx))[0]!.status).toBe("confirmed");
    expect(rows[1]!.log_index).toBe(log.logIndex);
    const rejected = (await deps.metrics.wsMessagesRejected.get()).values.reduce(
      (n, v) => n + v.value,
      0,
    );
    expect(rejected).toBeGreaterThanOrEqual(2);
  });

  test('"Detected reorg" counts the logs the node flagged removed before the parent-hash walk found the reorg', async () => {
    const ws = await startScriptedWsServer();
    open.push(ws);
    const { db, payer, deps } = await setUp({ wsUrl: ws.url, pendingPoll: 0, finalityDepth: 20 });
    const tx = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_mine");
    await waitFor(
      async () => {
        const rows = await rowsOf(db, tx);
        return rows.length === 2 && rows.every((r) => r.status === "confirmed");
      },
      5_000,
      "confirmed",
    );
    await waitFor(() => ws.subscribed("logs"), 5_000, "logs subscription");
    const receipt = await payer.publicClient.getTransactionReceipt({ hash: tx });
    for (const log of receipt.logs)
      ws.notify("logs", {
        address: log.address,
        topics: log.topics,
        data: log.data,
        blockNumber: `0x${log.blockNumber.toString(16)}`,
        blockHash: log.blockHash,
        transactionHash: log.transactionHash,
        transactionIndex: `0x${log.transactionIndex.toString(16)}`,
        logIndex: `0x${log.logIndex.toString(16)}`,
        removed: true,
      });
    await waitFor(
      async () => (await rowsOf(db, tx)).every((r) => r.status === "removed"),
      5_000,
      "removed flags honoured",
    );
    await payer.rpc("devnet_reorg", [1]);
    await payer.rpc("devnet_mine");
    const line = await waitFor(
      () => deps.lines.find((l) => l.msg === "Detected reorg"),
      10_000,
      "the reorg detected",
    );
    expect(line).toMatchObject({ depth: 1, removed_logs: 2, removed_by_node_flag: 2 });
  });

  test("polls heads and the pending view when no WebSocket is configured", async () => {
    const { db, devnet, payer } = await setUp({ ws: false });
    const tx = await payer.pay(SHOP);
    await payer.rpc("devnet_flashblock");
    await waitFor(
      async () => (await rowsOf(db, tx))[0]?.source === "pending",
      5_000,
      "pending poll",
    );
    await payer.rpc("devnet_mine");
    await waitFor(
      async () => (await liveLogs(db)).join() === (await canonicalLogs(devnet, payer)).join(),
      5_000,
      "head poll",
    );
  });

  test("rows past the finality depth become finalized", async () => {
    const { db, payer } = await setUp({ finalityDepth: 2 });
    const tx = await payer.pay(SHOP);
    await payer.rpc("devnet_mine");
    await waitFor(
      async () => (await rowsOf(db, tx))[0]?.status === "confirmed",
      5_000,
      "confirmed",
    );
    for (let i = 0; i < 3; i++) await payer.rpc("devnet_mine");
    await waitFor(
      async () => (await rowsOf(db, tx))[0]?.status === "finalized",
      5_000,
      "finalized",
    );
  });
});

void ShutdownError;
