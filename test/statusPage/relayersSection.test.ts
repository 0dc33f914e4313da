import { afterAll, describe, expect, test } from "vitest";
import { createMetrics } from "../../src/ops/metrics.js";
import { createStatusPage } from "../../src/statusPage/statusPage.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";

const stores: Store[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
});

async function page(
  facilitatorEnabled: boolean,
  feed: (metrics: ReturnType<typeof createMetrics>) => void,
): Promise<string> {
  const config = testConfig({
    rpc: { http: ["http://127.0.0.1:9"] },
    database: await sqliteBackend.freshDatabase(),
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const store = await openStore(config, { metrics });
  stores.push(store);
  feed(metrics);
  return createStatusPage({
    config: { ...config, facilitator: { ...config.facilitator, enabled: facilitatorEnabled } },
    metrics,
    store,
  })();
}

describe("the status page's relayer pool section", () => {
  test("shows each relayer's balance, pending captures and whether it is stuck", async () => {
    const html = await page(true, (metrics) => {
      for (const [relayer, balance, pending, stuck] of [
        ["0xaaa", 2e18, 3, 0],
        ["0xbbb", 5e14, 1, 1],
      ] as const) {
        metrics.relayerBalance.set({ relayer }, balance);
        metrics.relayerPendingCaptures.set({ relayer }, pending);
        metrics.relayerStuck.set({ relayer }, stuck);
      }
    });
    const section = /<section id="relayers">([\s\S]*?)<\/section>/.exec(html)?.[1];
    expect(section).toContain(
      "<td>0xaaa</td><td>2.000000 ETH</td><td>3</td><td>taking settles</td>",
    );
    expect(section).toContain(
      "<td>0xbbb</td><td>0.000500 ETH</td><td>1</td><td>stuck: takes no new settle</td>",
    );
  }, 30_000);

  test("is absent when the facilitator is off, and says the pool is unread before the driver's first pass", async () => {
    expect(await page(false, () => undefined)).not.toContain('id="relayers"');
    expect(await page(true, () => undefined)).toContain("No relayer read yet");
  }, 30_000);
});
