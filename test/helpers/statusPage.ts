import { createMetrics } from "../../src/ops/metrics.js";
import { createStatusPage } from "../../src/statusPage/statusPage.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "./backends.js";
import { testConfig } from "./context.js";

/**
 * The status page of a fresh SQLite store, its metrics fed by `feed` first, with the facilitator
 * on or off. Each call opens a store; its `closeStatusPageStores` (in an afterAll) closes them.
 */
export function createStatusPageHarness() {
  const stores: Store[] = [];
  return {
    page: async (
      facilitatorEnabled: boolean,
      feed: (metrics: ReturnType<typeof createMetrics>) => void,
    ): Promise<string> => {
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
    },
    closeStatusPageStores: async (): Promise<void> => {
      for (const store of stores.splice(0)) await store.close();
    },
  };
}
