import { afterEach, describe, expect, test } from "vitest";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { BROADCAST_CAPACITY_FLASHBLOCKS } from "../../src/devnet/front/subscriptions.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { startOpsServer } from "../../src/ops/httpServer.js";
import type { Database } from "../../src/store/sqlite/openDatabase.js";
import { createPayer, waitFor } from "../helpers/devnetPayments.js";
import { startFollower, type FollowerOptions, type Row } from "../helpers/followerHarness.js";

/** The daemon against a Base node's real failure modes (base/base#4916, #3274, #1439; base/node#963, #1129), played by the devnet's front. */

const SHOP = "0x000000000000000000000000000000000000fa17";
const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
const setUp = (options: FollowerOptions = {}) => startFollower(options, open);
type Harness = Awaited<ReturnType<typeof setUp>>;
type Payer = ReturnType<typeof createPayer>;

const rowsOf = (db: Database, tx: string) =>
  db
    .prepare("SELECT * FROM logs WHERE tx_hash = ? ORDER BY log_index")
    .all(tx.toLowerCase()) as Row[];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const value = async (
  metric: {
    get: () => Promise<{ values: Array<{ value: number; labels: Record<string, unknown> }> }>;
  },
  labels: Record<string, string> = {},
) =>
  (await metric.get()).values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((n, v) => n + v.value, 0);

async function canonicalLogs(devnet: Devnet, payer: Payer): Promise<string[]> {
  const logs = await payer.rpc<Array<{ blockHash: string; logIndex: string }>>("eth_getLogs", [
    { fromBlock: "0x0", toBlock: "latest", address: devnet.token, topics: [[...PAYMENT_TOPICS]] },
  ]);
  return logs.map((l) => `${l.blockHash}:${Number(l.logIndex)}`).sort();
}
/** Every stored row is settled (live, removed by a reorg, or dropped) and the live rows are exactly the chain's logs. */
async function caughtUp({ db, devnet, payer }: Harness): Promise<void> {
  const live = () =>
    (
      db
        .prepare(
          "SELECT block_hash, log_index FROM logs WHERE status IN ('confirmed', 'finalized')",
        )
        .all() as Row[]
    )
      .map((r) => `${r.block_hash}:${r.log_index}`)
      .sort();
  await waitFor(
    async () => live().join() === (await canonicalLogs(devnet, payer)).join(),
    10_000,
    "live rows equal the chain's logs",
  );
  expect(
    db
      .prepare(
        "SELECT COUNT(*) AS n FROM logs WHERE status NOT IN ('confirmed', 'finalized', 'removed', 'dropped')",
      )
      .get(),
  ).toEqual({ n: 0 });
}

describe("a Base node's failure modes", () => {
  test("pendingLogs notifications lost to a lagging subscriber are read from their blocks anyway, counted missed, and left out of the lead time", async () => {
    const h = await setUp({ pendingPoll: 0 });
    const { db, payer, deps } = h;
    await payer.rpc("devnet_stallFlashblockSubscribers", [true]);
    const sent: string[] = [];
    for (let i = 0; i < BROADCAST_CAPACITY_FLASHBLOCKS + 3; i++) {
      sent.push(await payer.pay(SHOP, 1));
      await payer.rpc("devnet_flashblock");
    }
    expect(await payer.rpc("devnet_stallFlashblockSubscribers", [false])).toEqual({ lagged: 3 });
    await waitFor(
      () => sent.slice(3).every((tx) => rowsOf(db, tx).length === 1),
      5_000,
      "the delivered pre-confirmations stored",
    );
    expect(sent.slice(0, 3).map((tx) => rowsOf(db, tx))).toEqual([[], [], []]);

    await payer.rpc("devnet_mine");
    await caughtUp(h);
    expect(
      sent.slice(0, 3).map((tx) => rowsOf(db, tx).map((r) => [r.status, r.preconfirmed_at])),
    ).toEqual(Array(3).fill([["confirmed", null]]));
    expect(sent.slice(3).every((tx) => rowsOf(db, tx)[0]!.preconfirmed_at !== null)).toBe(true);
    expect(await value(deps.metrics.preconfirmationsMissed)).toBe(3);
    const leadTimes = (await deps.metrics.preconfirmationLeadTime.get()).values.find(
      (v) => v.metricName === "flashindex_preconf_lead_time_seconds_count",
    );
    expect(leadTimes?.value).toBe(sent.length - 3);
  });

  test("a pending view that freezes or goes null while latest is healthy is distrusted after a few seconds, said so, and trusted again when it recovers; canonical blocks go on", async () => {
    const h = await setUp();
    const { db, payer, deps, health } = h;
    const server = await startOpsServer(
      { logger: deps.logger, metrics: deps.metrics, health },
      { host: "127.0.0.1", port: 0 },
    );
    open.push({ stop: server.close });
    const healthz = async () => (await fetch(`${server.url}/healthz`)).text();
    const trusted = () => value(deps.metrics.preconfirmedViewTrusted);
    expect(await healthz()).toBe("ok\n");

    for (const mode of ["frozen", "null"] as const) {
      // A view freezes with what it holds: a pending block with one payment.
      await payer.pay(SHOP, 1);
      await payer.rpc("devnet_flashblock");
      await payer.rpc("devnet_setPendingView", [mode]);
      const paid: string[] = [];
      // Five blocks go by: the frozen view falls more than 3 behind; the null one shows nothing at all.
      for (let i = 0; i < 5; i++) {
        paid.push(await payer.pay(SHOP, 1));
        await payer.rpc("devnet_flashblock");
        await payer.rpc("devnet_mine");
      }
      // The chain goes on while the watchdog looks, as Base's does: a null view is wrong only while
      // blocks come (preconfirmedViewWatch.ts), so one first read after the fifth block was applied
      // would otherwise wait for a block that never comes.
      let nextBlockAt = Date.now() + 1_000;
      const distrusted = async () => {
        if ((await trusted()) === 0) return true;
        if (Date.now() >= nextBlockAt) {
          nextBlockAt = Date.now() + 1_000;
          await payer.rpc("devnet_mine");
        }
        return false;
      };
      await waitFor(distrusted, 10_000, `the ${mode} view distrusted`);
      expect(await healthz()).toMatch(
        mode === "null"
          ? /^degraded\npre-confirmed view not trusted: the node's pending view is null/
          : /^degraded\npre-confirmed view not trusted: the node's pending view is \d+ blocks behind the head/,
      );
      expect(await value(deps.metrics.preconfirmedViewLag)).toBeGreaterThan(3);
      expect(health.notReadyReason()).toBeUndefined();
      await caughtUp(h);
      expect(paid.map((tx) => rowsOf(db, tx)[0]?.preconfirmed_at)).toEqual(Array(5).fill(null));

      await payer.rpc("devnet_setPendingView", ["live"]);
      const after = await payer.pay(SHOP, 1);
      await payer.rpc("devnet_flashblock");
      await waitFor(async () => (await trusted()) === 1, 5_000, "the view trusted again");
      await waitFor(
        () => rowsOf(db, after)[0]?.status === "preconfirmed",
        5_000,
        "pre-confirmations stored again",
      );
      expect([await healthz(), await value(deps.metrics.preconfirmedViewLag)]).toEqual(["ok\n", 0]);
      await payer.rpc("devnet_mine");
      await caughtUp(h);
    }
  });

  test("flashblocks that arrive before their parent's head wait for it, then are stored pre-confirmed; the head is not held up", async () => {
    const h = await setUp();
    const { db, payer, deps } = h;
    const headBlock = () => value(deps.metrics.chainHeadBlock);
    await payer.rpc("devnet_mine");
    const parent = Number(await payer.rpc<string>("eth_blockNumber")) + 1;
    await waitFor(
      async () => (await headBlock()) === parent - 1,
      5_000,
      "the grandparent applied from newHeads",
    );
    // newHeads of the parent comes 1.5 s late; the WebSocket was heard just now, so the head poll stays quiet.
    await payer.rpc("devnet_setHeadsDelay", [1_500]);
    await payer.rpc("devnet_mine");
    const tx = await payer.pay(SHOP, 1);
    await payer.rpc("devnet_flashblock");
    await pause(400);
    expect([await headBlock(), rowsOf(db, tx)]).toEqual([parent - 1, []]);

    await waitFor(
      () => rowsOf(db, tx)[0]?.status === "preconfirmed",
      5_000,
      "stored once the parent is applied",
    );
    expect([await headBlock(), rowsOf(db, tx)[0]!.block_number]).toEqual([parent, parent + 1]);
    await payer.rpc("devnet_setHeadsDelay", [0]);
    await payer.rpc("devnet_mine");
    await caughtUp(h);
    expect(await value(deps.metrics.preconfirmationsMissed)).toBe(0);
  });

  test("a pending block built on a parent the chain left is never stored as pre-confirmed; the canonical path goes on", async () => {
    const h = await setUp();
    const { db, payer, deps } = h;
    await payer.pay(SHOP, 1);
    await payer.rpc("devnet_flashblock");
    await payer.rpc("devnet_mine");
    await caughtUp(h);
    const first = await payer.pay(SHOP, 1);
    await payer.rpc("devnet_flashblock");
    await waitFor(
      () => rowsOf(db, first)[0]?.status === "preconfirmed",
      5_000,
      "pre-confirmed on the canonical parent",
    );

    // The parent is replaced; the node's pending block still claims the old one (base/base#2896).
    await payer.rpc("devnet_reorg", [1]);
    const second = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_flashblock");
    await waitFor(async () => (await value(deps.metrics.reorgs)) === 1, 5_000, "the reorg applied");
    await pause(500); // several polls and the notification of a pending block on the orphaned parent
    expect(rowsOf(db, second)).toEqual([]);

    await payer.rpc("devnet_mine");
    await caughtUp(h);
    expect(rowsOf(db, second).map((r) => [r.status, r.preconfirmed_at])).toEqual([
      ["confirmed", null],
      ["confirmed", null],
    ]);
    expect(
      await value(deps.metrics.preconfirmationsRefused, { reason: "wrong_parent" }),
    ).toBeGreaterThanOrEqual(2);
    expect(await value(deps.metrics.preconfirmationsMissed)).toBe(2);
  });

  test("a node that offers newFlashblockTransactions but not pendingLogs is followed through it, one transaction per message or arrays", async () => {
    const devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0 });
    open.push(devnet);
    await createPayer(devnet).rpc("devnet_setSubscriptionKinds", [
      ["newHeads", "logs", "newFlashblocks", "newFlashblockTransactions"],
    ]);
    const h = await setUp({ devnet, pendingPoll: 0 });
    const { db, payer, deps } = h;
    await waitFor(
      () =>
        deps.lines.some(
          (l) =>
            l.msg === "Subscribed" &&
            typeof l.params === "string" &&
            l.params.includes("newFlashblockTransactions"),
        ),
      5_000,
      "subscribed to newFlashblockTransactions",
    );
    const other = createPayer(devnet, 2);
    const single = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_flashblock");
    await waitFor(
      () => rowsOf(db, single).length === 2,
      5_000,
      "pre-confirmed through newFlashblockTransactions",
    );
    await payer.rpc("devnet_setPendingLogsMode", [{ shape: "array" }]);
    const [a, b] = [await payer.pay(SHOP, 1), await other.pay(SHOP, 3)];
    await payer.rpc("devnet_flashblock");
    await waitFor(
      () => rowsOf(db, a).length === 1 && rowsOf(db, b).length === 3,
      5_000,
      "pre-confirmed from an array",
    );
    expect(
      [...rowsOf(db, single), ...rowsOf(db, a), ...rowsOf(db, b)].map((r) => [r.status, r.source]),
    ).toEqual(Array(6).fill(["preconfirmed", "pending_ws"]));

    await payer.rpc("devnet_mine");
    await caughtUp(h);
    expect(await value(deps.metrics.preconfirmationsMissed)).toBe(0);
    expect(await value(deps.metrics.wsMessagesRejected)).toBe(0);
  });

  test.each([
    ["with Retry-After", { retryAfterSeconds: 2 }],
    ["without Retry-After", {}],
  ])(
    "a pending poll answered 429 %s backs off, and the subscription keeps storing pre-confirmations",
    async (_name, limit) => {
      const h = await setUp();
      const { db, payer } = h;
      await payer.rpc("devnet_setFaults", [{ pendingRateLimit: limit }]);
      const before = await payer.rpc<{ answered: number; refused: number }>("devnet_pendingReads");
      const tx = await payer.pay(SHOP, 1);
      await payer.rpc("devnet_flashblock");
      await waitFor(
        () => rowsOf(db, tx)[0]?.status === "preconfirmed",
        5_000,
        "pre-confirmed through the subscription",
      );
      expect(rowsOf(db, tx)[0]!.source).toBe("pending_ws");
      await pause(3_000);
      const during = await payer.rpc<{ answered: number; refused: number }>("devnet_pendingReads");
      // Unchecked, a 50 ms poll of 4 attempts a round asks about 240 times in 3 s.
      expect(during.refused - before.refused).toBeGreaterThan(0);
      expect(during.refused - before.refused).toBeLessThanOrEqual(40);

      // The head path goes on meanwhile: a block is applied and a pre-confirmation that never lands is marked dropped.
      const lost = await createPayer(h.devnet, 2).pay(SHOP, 1);
      await payer.rpc("devnet_flashblock");
      await waitFor(
        () => rowsOf(db, lost)[0]?.status === "preconfirmed",
        5_000,
        "the lost payment pre-confirmed",
      );
      await payer.rpc("devnet_dropPreconfirmed", [lost]);
      await payer.rpc("devnet_mine");
      await waitFor(
        () =>
          rowsOf(db, tx)[0]?.status === "confirmed" && rowsOf(db, lost)[0]?.status === "dropped",
        5_000,
        "the block applied under the rate limit",
      );

      await payer.rpc("devnet_setFaults", [{}]);
      await waitFor(
        async () =>
          (await payer.rpc<{ answered: number }>("devnet_pendingReads")).answered > during.answered,
        15_000,
        "the poll back",
      );
      await payer.rpc("devnet_mine");
      await caughtUp(h);
    },
  );
});
