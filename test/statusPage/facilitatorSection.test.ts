import { afterAll, describe, expect, test } from "vitest";
import { createStatusPageHarness } from "../helpers/statusPage.js";

const { page, closeStatusPageStores } = createStatusPageHarness();
afterAll(closeStatusPageStores);

describe("the status page's facilitator section", () => {
  test("shows verify and settle outcomes by reason, settle latency, the relayer's balance and pending nonce gap when the facilitator is enabled", async () => {
    const html = await page(true, (metrics) => {
      metrics.settleRequests.inc({ endpoint: "settle", outcome: "success" }, 40);
      metrics.settleRequests.inc({ endpoint: "verify", outcome: "valid" }, 12);
      metrics.settleRequests.inc(
        { endpoint: "settle", outcome: "invalid_exact_evm_insufficient_balance" },
        3,
      );
      metrics.settleRequests.inc({ endpoint: "settle", outcome: "settlement_pending" });
      // 40 successes: 30 within 0.3 s, 9 more within 0.5 s, one at 2 s.
      for (let i = 0; i < 30; i++) metrics.settleLatency.observe({ outcome: "success" }, 0.25);
      for (let i = 0; i < 9; i++) metrics.settleLatency.observe({ outcome: "success" }, 0.45);
      metrics.settleLatency.observe({ outcome: "success" }, 2);
      metrics.settleLatency.observe({ outcome: "refused" }, 9);
      metrics.relayerBalance.set(1.5e18);
      metrics.relayerNonceGap.set(2);
    });
    const section = /<section id="facilitator">([\s\S]*?)<\/section>/.exec(html)?.[1];
    expect(section).toBeDefined();
    expect(section).toContain("<dt>Settled</dt><dd>40</dd>");
    expect(section).toContain("<dt>Settle latency p50</dt><dd>≤ 300 ms</dd>");
    expect(section).toContain("<dt>Settle latency p99</dt><dd>≤ 2000 ms</dd>");
    expect(section).toContain("<dt>Relayer balance</dt><dd>1.500000 ETH</dd>");
    expect(section).toContain("<dt>Pending nonce gap</dt><dd>2</dd>");
    for (const [endpoint, outcome, count] of [
      ["settle", "success", 40],
      ["verify", "valid", 12],
      ["settle", "invalid_exact_evm_insufficient_balance", 3],
      ["settle", "settlement_pending", 1],
    ])
      expect(section).toContain(`<td>${endpoint}</td><td>${outcome}</td><td>${count}</td>`);
  }, 30_000);

  test("is absent when the facilitator is off, and says so before any request when it is on", async () => {
    expect(await page(false, () => undefined)).not.toContain('id="facilitator"');
    const idle = await page(true, () => undefined);
    expect(idle).toContain("No verify or settle requests yet.");
    expect(idle).toContain("<dt>Relayer balance</dt><dd>–</dd>");
  }, 30_000);
});
