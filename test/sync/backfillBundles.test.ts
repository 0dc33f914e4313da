import { createPublicClient, http, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { expectMixedBundleCredited, sendMixedBundle } from "../helpers/bundles.js";
import { testConfig, testDeps } from "../helpers/context.js";

let devnet: Devnet;
let sent: { bundle: Hex; lookalike: Hex };
let head: number;

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0 });
  sent = await sendMixedBundle(devnet, 7, 3);
  head = Number(await createPublicClient({ transport: http(devnet.anvilUrl) }).getBlockNumber({ cacheTime: 0 }));
}, 60_000);
afterAll(async () => {
  await devnet?.stop();
  await stopFileBackends();
});

/** A backfill of the devnet's whole chain into a fresh database of `backend`, with attribution; returns a reader of it. */
async function backfilled(backend: TestBackend, options: { stageAttribution?: boolean } = {}) {
  const config = testConfig({
    attribution: { enabled: true },
    rpc: { http: [devnet.anvilUrl] },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    database: await backend.freshDatabase(),
  });
  const deps = testDeps(config);
  const store = await openStore(config, { metrics: deps.metrics });
  try {
    const staging = options.stageAttribution === true ? { bulkMinLogs: 0, writerThread: true, stageAttribution: true } : {};
    await backfill(createSyncDeps({ ...deps, client: createRpcClient(deps) }, store), { to: head, finalized: head }, { decodeThreadAfterLogs: 0, ...staging });
  } finally {
    await store.close();
  }
  return backend.reader(config.database);
}

describe.each(BACKENDS)("a backfilled bundle on $name", (backend) => {
  test("each payment is credited to its own user operation's codes (receipts read per window), the bundler's only outside every operation", async () => {
    const db = await backfilled(backend);
    try {
      await expectMixedBundleCredited(db, sent);
      expect(Number((await db.all<{ n: unknown }>("SELECT COUNT(*) AS n FROM unmapped_bundle_transfers"))[0]!.n)).toBe(0);
    } finally {
      await db.close();
    }
  });
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
