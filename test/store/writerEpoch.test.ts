import pg from "pg";
import { afterAll, afterEach, expect, test } from "vitest";
import { EXIT_TEMPORARY } from "../../src/errors/base.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { acquireStoreWriterLock, openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import type { WriterLock } from "../../src/store/types.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});
afterAll(() => stopFileBackends());

async function writer(
  database: Record<string, unknown>,
): Promise<{ lock: WriterLock; store: Store }> {
  const config = testConfig({ rpc: { http: ["http://127.0.0.1:9"] }, database });
  // The first writer's lock may take a moment to go with its connection: try until it is ours.
  const lock = await waitFor(
    () => acquireStoreWriterLock(config, "start").catch(() => undefined),
    10_000,
    "the writer lock",
  );
  const store = await openStore(config, {
    metrics: createMetrics({ defaultMetrics: false }),
    lock,
  });
  open.push(
    () => store.close(),
    () => lock.release(),
  );
  return { lock, store };
}

test("a Postgres writer whose lock went unnoticed to another writer stops at its next write (exit 75), writing nothing", async () => {
  const database = await postgresBackend.freshDatabase();
  const first = await writer(database);
  expect(await first.store.finalizeThrough(0, 1)).toBe(0);

  // The lock's connection ends without the first writer noticing (released: its own check passes).
  first.lock.release();
  const second = await writer(database);

  const refused = first.store.finalizeThrough(0, 2);
  await expect(refused).rejects.toMatchObject({
    name: "WriterEpochLostError",
    exitCode: EXIT_TEMPORARY,
  });
  await expect(refused).rejects.toThrow(/Another writer took over .* \(writer epoch 2, ours 1\)/);
  await expect(first.store.webhooks.syncSubscriptions([], 0, 3)).rejects.toMatchObject({
    name: "WriterEpochLostError",
  });
  expect(await second.store.finalizeThrough(0, 4)).toBe(0);

  const client = new pg.Client({ connectionString: database.url as string });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT value FROM "${database.schema as string}".meta WHERE key = 'writer_epoch'`,
    );
    expect(rows).toEqual([{ value: "2" }]);
  } finally {
    await client.end();
  }
});
