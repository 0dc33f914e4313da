import { afterAll, describe, expect, test } from "vitest";
import { packRows } from "../../src/rows/packedRows.js";
import { PRECONFIRMED_BLOCK_HASH as ZERO_HASH, type RpcLog } from "../../src/rows/rpcLog.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import {
  createStatusPage,
  escapeHtml,
  percentile,
  renderStatusPage,
  type StatusMetrics,
} from "../../src/statusPage/statusPage.js";
import { openStore } from "../../src/store/openStore.js";
import type { StatusSnapshot } from "../../src/store/types.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";
import { word } from "../helpers/fixtures.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE = "0x00000000000000000000000000000000000a11ce";
const BOB = "0x0000000000000000000000000000000000000b0b";

function transfer(block: number, logIndex: number): RpcLog {
  return {
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word(ALICE), word(BOB)],
    data: word("f4240"),
    blockNumber: block,
    blockHash: word(`b${block}`),
    blockTimestamp: 1_700_000_000 + block,
    transactionHash: word(`ab${block.toString(16).padStart(2, "0")}`),
    transactionIndex: 0,
    logIndex,
    removed: false,
  };
}

function rows(
  logs: RpcLog[],
  status: "confirmed" | "preconfirmed",
  source: "backfill" | "head" | "pending_ws",
) {
  return toLogRows(logs, { chainId: 8453, statusOf: () => status, source, timestampOf: () => 0 })
    .rows;
}

const METRICS: StatusMetrics = {
  chainHead: 120,
  lagBlocks: 1,
  lagSeconds: 2,
  reorgs: 3,
  droppedPreconfirmed: 4,
  webhooksDelivered: 5,
  webhooksFailed: 6,
  webhooksParked: 7,
};
const HOSTILE = `<img src=x onerror="alert(1)">'&`;

function snapshot(overrides: Partial<StatusSnapshot> = {}): StatusSnapshot {
  return {
    tokens: [
      {
        token: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        label: HOSTILE,
        startBlock: 21,
        checkpoint: 70,
      },
    ],
    newestBlock: 119,
    leadTimesMs: [300, 100, 200, 400],
    payments: [
      {
        token: "0xt",
        from: "0x00000000000000000000000000000000000a11ce",
        to: "0xb0b",
        value: "1000000",
        status: "confirmed",
        blockNumber: 119,
        txHash: `0x${"ab".repeat(32)}`,
        codes: `bc_${HOSTILE}`,
      },
    ],
    removals: [],
    orders: [{ state: "authorized", n: 2 }],
    voidedThenCaptured: 1,
    attributionOwedBlocks: 0,
    webhooks: { pending: 8, parked: 9, subscriptions: 1 },
    webhookAttempts: [],
    ...overrides,
  };
}

describe("status page", () => {
  test("percentile() is nearest-rank; escapeHtml() leaves no markup characters", () => {
    expect([
      percentile([300, 100, 200, 400], 50),
      percentile([300, 100, 200, 400], 99),
      percentile([], 50),
    ]).toEqual([200, 400, undefined]);
    expect(escapeHtml(HOSTILE)).not.toMatch(/[<>"']/);
  });

  test("renderStatusPage() escapes every value from the database and config, refreshes itself, and loads nothing from outside", () => {
    const html = renderStatusPage({
      chainId: 8453,
      now: 0,
      snapshot: snapshot(),
      metrics: METRICS,
    });
    expect(html).not.toContain("<img");
    expect(html).toContain(escapeHtml(HOSTILE));
    expect(html).toContain('<meta http-equiv="refresh" content="5">');
    expect(html).not.toMatch(/<[^>]*\b(?:src|href)=|<script|<link/i);
    // Backfill progress: blocks 21..70 of 21..120 is 50%.
    expect(html).toContain("<td>50%</td>");
    expect(html).toMatch(/<dt>p50<\/dt><dd>200 ms<\/dd><dt>p99<\/dt><dd>400 ms<\/dd>/);
  });
});

describe("GET / on the ops server", () => {
  test("answers 503 until the daemon gives it a source, then the page as HTML", async () => {
    const { startOpsServer } = await import("../../src/ops/httpServer.js");
    const { createMetrics } = await import("../../src/ops/metrics.js");
    const { createHealth } = await import("../../src/ops/health.js");
    const { createMemoryLogger } = await import("../helpers/context.js");
    const server = await startOpsServer(
      {
        logger: createMemoryLogger().logger,
        metrics: createMetrics({ defaultMetrics: false }),
        health: createHealth(),
      },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      expect((await fetch(`${server.url}/`)).status).toBe(503);
      server.setStatusPage(async () =>
        renderStatusPage({ chainId: 8453, now: 0, snapshot: snapshot(), metrics: METRICS }),
      );
      const response = await fetch(`${server.url}/`);
      expect([response.status, response.headers.get("content-type")]).toEqual([
        200,
        "text/html; charset=utf-8",
      ]);
      expect(await response.text()).toContain("<h1>flashindex · chain 8453</h1>");
    } finally {
      await server.close();
    }
  });
});

describe.each(BACKENDS)("status snapshot from the store on $name", (backend) => {
  afterAll(() => stopFileBackends());

  test("statusSnapshot() and createStatusPage() show backfill progress, lead times, payments, removals, orders and webhook deliveries", async () => {
    const { createMetrics } = await import("../../src/ops/metrics.js");
    const config = testConfig({
      rpc: { http: ["http://127.0.0.1:9"] },
      database: await backend.freshDatabase(),
      tokens: [{ address: TOKEN, startBlock: 5, label: "USDC" }],
    });
    const metrics = createMetrics({ defaultMetrics: false });
    const store = await openStore(config, { metrics });
    try {
      const subscription = (
        await store.webhooks.syncSubscriptions(["http://127.0.0.1:1/hook"], 0, 1)
      ).get("http://127.0.0.1:1/hook")!.id;
      const writer = store.openWindowWriter({ bulk: false });
      await writer.commit(
        {
          from: 5,
          to: 9,
          tokens: [TOKEN],
          rows: packRows(rows([transfer(6, 0)], "confirmed", "backfill")),
          attribution: { batches: [] },
        },
        1,
      );
      await writer.close();
      const now = Date.now();
      await store.insertPreconfirmed(
        rows([{ ...transfer(10, 0), blockHash: ZERO_HASH }], "preconfirmed", "pending_ws"),
        now - 300,
      );
      await store.applyChainChange(
        {
          kind: "head_block",
          orphaned: [],
          blocks: [{ number: 10, rows: rows([transfer(10, 0)], "confirmed", "head") }],
          synced: [{ token: TOKEN, range: { from: 10, to: 10 } }],
        },
        now,
      );
      await store.applyChainChange(
        {
          kind: "head_block",
          orphaned: [],
          blocks: [{ number: 11, rows: rows([transfer(11, 0)], "confirmed", "head") }],
          synced: [],
        },
        now,
      );
      await store.applyChainChange(
        { kind: "reorg", orphaned: [{ number: 11, hash: word("b11") }], blocks: [], synced: [] },
        now + 1,
      );
      const order = await store.addOrder(
        {
          chainId: 8453,
          token: TOKEN,
          authorizer: ALICE,
          payee: BOB,
          value: 7n,
          validAfter: 0,
          validBefore: 4_000_000_000,
          nonce: word("5a"),
          kind: "transfer",
          signature: `0x${"11".repeat(65)}`,
        },
        now,
      );
      await store.voidOrder(order.id, now);
      const [event] = await store.webhooks.eventsAfter(0, 1);
      await store.webhooks.fanOut(subscription, [event!.id], event!.id, now);
      await store.webhooks.recordAttempt(
        {
          subscriptionId: subscription,
          eventId: event!.id,
          attempt: 1,
          at: now,
          durationMs: 12,
          httpStatus: 500,
          error: "HTTP 500",
        },
        { state: "parked", nextAttemptAt: now },
      );

      const snapshot = await store.statusSnapshot(config.tokens, now + 2);
      expect(snapshot.tokens).toEqual([
        { token: config.tokens[0]!.address, label: "USDC", startBlock: 5, checkpoint: 10 },
      ]);
      expect(snapshot.newestBlock).toBe(11);
      expect(snapshot.leadTimesMs).toEqual([300]);
      expect(snapshot.payments.map((p) => [p.blockNumber, p.status, p.value])).toEqual([
        [11, "removed", "1000000"],
        [10, "confirmed", "1000000"],
        [6, "confirmed", "1000000"],
      ]);
      expect(snapshot.removals).toEqual([
        { status: "removed", blockNumber: 11, txHash: word("ab0b"), removedAt: now + 1 },
      ]);
      expect(snapshot.orders).toEqual([{ state: "voided_offchain", n: 1 }]);
      expect(snapshot.voidedThenCaptured).toBe(0);
      expect(snapshot.webhooks).toEqual({ pending: 0, parked: 1, subscriptions: 1 });
      expect(snapshot.webhookAttempts).toEqual([
        {
          subscriptionId: subscription,
          eventId: event!.id,
          type: event!.type,
          attempt: 1,
          at: now,
          durationMs: 12,
          httpStatus: 500,
          error: "HTTP 500",
        },
      ]);

      const html = await createStatusPage({ config, metrics, store })();
      expect(html).toContain("<td>USDC</td>");
      expect(html).toContain("<td>HTTP 500</td>");
      expect(html).toMatch(/<td>voided_offchain<\/td><td>1<\/td>/);
    } finally {
      await store.close();
    }
  });
});
