import { describe, expect, test } from "vitest";
import { escapeHtml, percentile, renderStatusPage, type StatusMetrics } from "../../src/ops/statusPage.js";
import type { StatusSnapshot } from "../../src/store/statusPageQueries.js";

const METRICS: StatusMetrics = { chainHead: 120, lagBlocks: 1, lagSeconds: 2, reorgs: 3, droppedPreconfirmed: 4, webhooksDelivered: 5, webhooksFailed: 6, webhooksParked: 7 };
const HOSTILE = `<img src=x onerror="alert(1)">'&`;

function snapshot(overrides: Partial<StatusSnapshot> = {}): StatusSnapshot {
  return {
    tokens: [{ token: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", label: HOSTILE, startBlock: 21, checkpoint: 70 }],
    newestBlock: 119,
    leadTimesMs: [300, 100, 200, 400],
    payments: [{ token: "0xt", from: "0x00000000000000000000000000000000000a11ce", to: "0xb0b", value: "1000000", status: "confirmed", blockNumber: 119, txHash: `0x${"ab".repeat(32)}`, codes: `bc_${HOSTILE}` }],
    removals: [],
    orders: [{ state: "authorized", n: 2 }],
    voidedThenCaptured: 1,
    webhooks: { pending: 8, parked: 9, subscriptions: 1 },
    webhookAttempts: [],
    ...overrides,
  };
}

describe("status page", () => {
  test("percentile() is nearest-rank; escapeHtml() leaves no markup characters", () => {
    expect([percentile([300, 100, 200, 400], 50), percentile([300, 100, 200, 400], 99), percentile([], 50)]).toEqual([200, 400, undefined]);
    expect(escapeHtml(HOSTILE)).not.toMatch(/[<>"']/);
  });

  test("renderStatusPage() escapes every value from the database and config, refreshes itself, and loads nothing from outside", () => {
    const html = renderStatusPage({ chainId: 8453, now: 0, snapshot: snapshot(), metrics: METRICS });
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
    const server = await startOpsServer({ logger: createMemoryLogger().logger, metrics: createMetrics({ defaultMetrics: false }), health: createHealth() }, { host: "127.0.0.1", port: 0 });
    try {
      expect((await fetch(`${server.url}/`)).status).toBe(503);
      server.setStatusPage(async () => renderStatusPage({ chainId: 8453, now: 0, snapshot: snapshot(), metrics: METRICS }));
      const response = await fetch(`${server.url}/`);
      expect([response.status, response.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
      expect(await response.text()).toContain("<h1>flashindex · chain 8453</h1>");
    } finally {
      await server.close();
    }
  });
});
