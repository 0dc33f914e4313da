import { afterAll, describe, expect, test } from "vitest";
import { createStatusPageHarness } from "../helpers/statusPage.js";

const { page, closeStatusPageStores } = createStatusPageHarness();
afterAll(closeStatusPageStores);

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
