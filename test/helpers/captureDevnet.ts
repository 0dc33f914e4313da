import { createPublicClient, http, type PublicClient } from "viem";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "./backends.js";
import { testConfig } from "./context.js";

/**
 * A devnet (its blocks and flashblocks at the given pace), a viem client on it and a fresh SQLite
 * store on its chain: what the capture tests sign orders into and relay from. `stop` closes both.
 */
export async function startCaptureDevnet(pace: {
  blockTimeMs: number;
  flashblockIntervalMs: number;
}) {
  const devnet: Devnet = await startDevnet({ ...pace, port: 0 });
  const client: PublicClient = createPublicClient({ transport: http(devnet.httpUrl) });
  let store: Store;
  try {
    const config = testConfig({
      chainId: devnet.chainId,
      rpc: { http: [devnet.httpUrl] },
      database: await sqliteBackend.freshDatabase(),
      logLevel: "silent",
    });
    store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  } catch (error) {
    await devnet.stop();
    throw error;
  }
  return {
    devnet,
    client,
    store,
    stop: async () => {
      await store.close();
      await devnet.stop();
    },
  };
}
