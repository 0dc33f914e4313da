import { createRelayerNonces, type RelayerNonces } from "../../src/authorization/relayerNonces.js";
import type { RpcClient } from "../../src/chain/rpcClient.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "./backends.js";
import { testConfig } from "./context.js";

/** A fresh SQLite store on `chainId` and a hand on its nonce book: what a cancel relays with outside the CLI. */
export async function testRelayerNonces(
  client: RpcClient,
  chainId: number,
): Promise<{ store: Store; nonces: RelayerNonces }> {
  const config = testConfig({
    chainId,
    rpc: { http: ["http://127.0.0.1:9"] },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  return { store, nonces: createRelayerNonces({ client, book: store.nonces }) };
}
