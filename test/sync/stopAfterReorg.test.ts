import type { Log } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import {
  BACKENDS,
  stopFileBackends,
  type TableReader,
  type TestBackend,
} from "../helpers/backends.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { startFollower, type Row } from "../helpers/followerHarness.js";
import { startScriptedWsServer } from "../helpers/scriptedWsServer.js";

// The follower stopped at the exact step a kill -9 of the daemon can land on (crashRealtime.test.ts
// lost these blocks under load): after a reorg began to be applied, before the chain's next block
// is. The restart comes late, the orphaned heights already final, so only the synced ranges decide
// whether those heights are read again.

const SHOP = "0x000000000000000000000000000000000000c0de";
/** Deep enough for the follower to walk a reorg of two blocks back to their parent. */
const FINALITY_DEPTH = 3;

const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
afterAll(() => stopFileBackends());

type Follower = Awaited<ReturnType<typeof startFollower>>;

const rowsOf = (db: TableReader, tx: string) =>
  db.all<Row>("SELECT * FROM logs WHERE tx_hash = ? ORDER BY id", [tx.toLowerCase()]);

/** The chain's logs of the token missing from the live rows, and live rows the chain lacks (`blockHash:logIndex`). */
async function difference(follower: Follower) {
  const filter = {
    fromBlock: "0x0",
    toBlock: "latest",
    address: follower.devnet.token,
    topics: [[...PAYMENT_TOPICS]],
  };
  const logs = await follower.payer.rpc<Array<{ blockHash: string; logIndex: string }>>(
    "eth_getLogs",
    [filter],
  );
  const rows = await follower.reader.all<Row>(
    "SELECT block_hash, log_index FROM logs WHERE status IN ('confirmed', 'finalized')",
  );
  const chain = logs.map((l) => `${l.blockHash}:${Number(l.logIndex)}`);
  const live = rows.map((r) => `${r.block_hash}:${r.log_index}`);
  return {
    chainLogs: chain.length,
    missing: chain.filter((l) => !live.includes(l)),
    extra: live.filter((l) => !chain.includes(l)),
  };
}

/** Mines past the finality depth, then restarts the follower on the same database; its rows against the chain's. */
async function restartLate(first: Follower, backend: TestBackend) {
  for (let i = 0; i <= FINALITY_DEPTH; i++) await first.payer.rpc("devnet_mine");
  const database = { ...first.config.database };
  const second = await startFollower(
    {
      backend,
      ws: false,
      pendingPoll: 0,
      finalityDepth: FINALITY_DEPTH,
      devnet: first.devnet,
      database,
    },
    open,
  );
  const settled = async () => {
    const { missing, extra } = await difference(second);
    return missing.length === 0 && extra.length === 0;
  };
  await waitFor(settled, 5_000, "live rows equal the chain").catch(() => undefined);
  return difference(second);
}

/** A log as a `logs` subscription re-sends it after a reorg. */
const removedNotification = (log: Log) => ({
  address: log.address,
  topics: log.topics,
  data: log.data,
  blockNumber: `0x${log.blockNumber!.toString(16)}`,
  blockHash: log.blockHash,
  transactionHash: log.transactionHash,
  transactionIndex: `0x${log.transactionIndex!.toString(16)}`,
  logIndex: `0x${log.logIndex!.toString(16)}`,
  removed: true,
});

describe.each(BACKENDS)("a stop right after a reorg on $name", (backend) => {
  test("a reorg onto a shorter branch: the orphaned height above it is indexed again after a late restart", async () => {
    const first = await startFollower(
      { backend, ws: false, pendingPoll: 0, finalityDepth: FINALITY_DEPTH },
      open,
    );
    const { payer } = first;
    await payer.pay(SHOP, 2);
    await payer.rpc("devnet_mine");
    const tx = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_mine");
    const top = Number(await payer.rpc<string>("eth_blockNumber"));
    await waitFor(
      async () => (await rowsOf(first.reader, tx)).some((r) => r.status === "confirmed"),
      5_000,
      "confirmed",
    );

    // The last two blocks give way to one: the follower applies a reorg onto a branch a block shorter.
    await payer.rpc("anvil_rollback", [2]);
    payer.resync();
    await payer.rpc("devnet_mine");
    const reorg = await waitFor(
      () => first.deps.lines.find((l) => l.msg === "Detected reorg"),
      10_000,
      "the reorg applied",
    );
    expect(reorg).toMatchObject({ depth: 2, new_head: top - 1 });
    await first.stop();

    // The chain's next block, at the orphaned height, holds logs.
    await payer.pay(SHOP, 3);
    await payer.rpc("devnet_mine");
    const { chainLogs, missing, extra } = await restartLate(first, backend);
    expect(chainLogs).toBeGreaterThan(0);
    expect({ missing, extra }).toEqual({ missing: [], extra: [] });
  });

  test("logs the node flagged removed: their block is indexed again after a late restart", async () => {
    const ws = await startScriptedWsServer();
    open.push(ws);
    const first = await startFollower(
      { backend, wsUrl: ws.url, pendingPoll: 0, finalityDepth: FINALITY_DEPTH },
      open,
    );
    const { payer } = first;
    const tx = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_mine");
    const confirmed = async () => {
      const rows = await rowsOf(first.reader, tx);
      return rows.length === 2 && rows.every((r) => r.status === "confirmed");
    };
    await waitFor(confirmed, 5_000, "confirmed");
    await waitFor(() => ws.subscribed("logs"), 5_000, "logs subscription");

    // The node re-sends the block's logs removed (its reorg); the follower stops before it sees the new branch.
    const receipt = await payer.publicClient.getTransactionReceipt({ hash: tx });
    for (const log of receipt.logs) ws.notify("logs", removedNotification(log));
    await waitFor(
      async () => (await rowsOf(first.reader, tx)).every((r) => r.status === "removed"),
      5_000,
      "removed flags honoured",
    );
    await first.stop();

    // The reorg the flags announced: the same payment in a block of another hash at the same height.
    await payer.rpc("devnet_reorg", [1]);
    const { chainLogs, missing, extra } = await restartLate(first, backend);
    expect(chainLogs).toBeGreaterThan(0);
    expect({ missing, extra }).toEqual({ missing: [], extra: [] });
  });
});
