import { createPublicClient, http, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTrailingAttribution } from "../../src/attribution/trailingAttribution.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { expectMixedBundleCredited, sendMixedBundle } from "../helpers/bundles.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startProviderProxy } from "../helpers/providerProxy.js";

let devnet: Devnet;
let sent: { bundle: Hex; lookalike: Hex };
let head: number;

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0 });
  sent = await sendMixedBundle(devnet, 7, 3);
  head = Number(
    await createPublicClient({ transport: http(devnet.anvilUrl) }).getBlockNumber({ cacheTime: 0 }),
  );
}, 60_000);
afterAll(async () => {
  await devnet?.stop();
  await stopFileBackends();
});

/**
 * A backfill of the devnet's whole chain into a fresh database of `backend`, with attribution; returns a reader of it.
 * `trailing`: through a rate-limiting provider that has already refused the client, so attribution trails the logs.
 */
async function backfilled(
  backend: TestBackend,
  options: { stageAttribution?: boolean; trailing?: boolean } = {},
) {
  const proxy =
    options.trailing === true
      ? await startProviderProxy(devnet.anvilUrl, { latencyMs: 0, requestsPerSecond: 4 })
      : undefined;
  const config = testConfig({
    attribution: { enabled: true },
    rpc: { http: [proxy?.url ?? devnet.anvilUrl] },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    database: await backend.freshDatabase(),
  });
  const deps = testDeps(config);
  const store = await openStore(config, { metrics: deps.metrics });
  try {
    const client = createRpcClient(deps);
    if (proxy !== undefined)
      await Promise.all(Array.from({ length: 8 }, () => client.request("eth_blockNumber", [])));
    const syncDeps = createSyncDeps({ ...deps, client }, store);
    const staging =
      options.stageAttribution === true
        ? { bulkMinLogs: 0, writerThread: true, stageAttribution: true }
        : {};
    await backfill(
      syncDeps,
      { to: head, finalized: head },
      { decodeThreadAfterLogs: 0, ...staging },
    );
    if (proxy !== undefined) {
      expect(await store.owedAttribution.count()).toBeGreaterThan(0);
      const trailing = createTrailingAttribution(
        { ...syncDeps, attributor: syncDeps.attributor! },
        { mode: "batch" },
      );
      await trailing.payAll();
      await trailing.close();
      expect(await store.owedAttribution.count()).toBe(0);
    }
  } finally {
    await store.close();
    await proxy?.close();
  }
  return backend.reader(config.database);
}

describe.each(BACKENDS)("a backfilled bundle on $name", (backend) => {
  test("each payment is credited to its own user operation's codes (receipts read per window), the bundler's only outside every operation", async () => {
    const db = await backfilled(backend);
    try {
      await expectMixedBundleCredited(db, sent);
      expect(
        Number(
          (await db.all<{ n: unknown }>("SELECT COUNT(*) AS n FROM unmapped_bundle_transfers"))[0]!
            .n,
        ),
      ).toBe(0);
    } finally {
      await db.close();
    }
  });

  test("whose attribution trailed the logs (a rate-limited provider) is mapped from its receipt all the same", async () => {
    const db = await backfilled(backend, { trailing: true });
    try {
      await expectMixedBundleCredited(db, sent);
      expect(
        Number(
          (await db.all<{ n: unknown }>("SELECT COUNT(*) AS n FROM unmapped_bundle_transfers"))[0]!
            .n,
        ),
      ).toBe(0);
    } finally {
      await db.close();
    }
  }, 60_000);
});

test("a bulk SQLite backfill, which stages attribution, maps its bundles as the daemon does once the staging is moved", async () => {
  const db = await backfilled(BACKENDS[0]!, { stageAttribution: true });
  try {
    await expectMixedBundleCredited(db, sent);
    expect(await db.all("SELECT COUNT(*) AS n FROM unmapped_bundle_transfers")).toEqual([{ n: 0 }]);
    expect(await db.all("SELECT COUNT(*) AS n FROM staged_bundles")).toEqual([{ n: 0 }]);
  } finally {
    await db.close();
  }
});
