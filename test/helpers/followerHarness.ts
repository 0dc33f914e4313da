import { createRpcClient } from "../../src/chain/rpcClient.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createHealth } from "../../src/ops/health.js";
import { openDatabase, type Database } from "../../src/store/sqlite/openDatabase.js";
import { openStore } from "../../src/store/openStore.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { sqliteBackend, type TestBackend } from "./backends.js";
import { createPreconfirmedIndexer } from "../../src/sync/preconfirmed/preconfirmedIndexer.js";
import { createPreconfirmedBackoff } from "../../src/sync/preconfirmed/preconfirmedBackoff.js";
import { createHeadFollower } from "../../src/sync/head/headFollower.js";
import { testConfig, testDeps } from "./context.js";

/** Stands in for the SQLite handle on other backends: a test reading it there is a mistake in the test. */
const noSqlite = new Proxy(
  {},
  {
    get: () => {
      throw new Error("this follower runs on Postgres: read through `reader`");
    },
  },
);
import { createPayer, waitFor } from "./devnetPayments.js";

export type FollowerOptions = {
  finalityDepth?: number;
  pendingPoll?: number;
  ws?: boolean;
  wsUrl?: string;
  preconfWsUrl?: string;
  /** HTTP endpoint to follow through (default: the devnet's own). */
  httpUrl?: string;
  /** realtime.requestTimeoutMs (default: the config default). */
  requestTimeoutMs?: number;
  /** The database section to reuse (a restart); default: a fresh database of `backend`. */
  database?: Record<string, unknown>;
  devnet?: Devnet;
  /** Default: SQLite. */
  backend?: TestBackend;
  /** The token's watch.addresses (default: every log). */
  watch?: readonly string[];
};

export type Row = {
  status: string;
  block_hash: string;
  block_number: number;
  log_index: number;
  tx_hash: string;
  preconfirmed_at: number | null;
  confirmed_at: number | null;
  removed_at: number | null;
  source: string;
};

/**
 * The daemon's realtime half, in-process, on a manual-mode devnet (time moves with devnet_flashblock
 * and devnet_mine): head follower plus pending indexer over a fresh SQLite file. Everything it opens
 * is pushed on `open` for the test's afterEach to stop.
 */
export async function startFollower(
  options: FollowerOptions,
  open: Array<{ stop: () => Promise<void> }>,
) {
  const backend = options.backend ?? sqliteBackend;
  const devnet = options.devnet ?? (await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0 }));
  if (options.devnet === undefined) open.push(devnet);
  const config = testConfig({
    rpc: {
      http: [options.httpUrl ?? devnet.httpUrl],
      ...(options.ws === false
        ? {}
        : { ws: options.wsUrl ?? devnet.wsUrl, preconfWs: options.preconfWsUrl ?? devnet.wsUrl }),
    },
    tokens: [
      {
        address: devnet.token,
        startBlock: devnet.tokenDeployBlock,
        ...(options.watch === undefined ? {} : { watch: { addresses: options.watch } }),
      },
    ],
    finality: { depth: options.finalityDepth ?? 8 },
    realtime: {
      headPollIntervalMs: 100,
      pendingPollIntervalMs: options.pendingPoll ?? 50,
      reconnectInitialDelayMs: 20,
      reconnectMaxDelayMs: 200,
      ...(options.requestTimeoutMs === undefined
        ? {}
        : { requestTimeoutMs: options.requestTimeoutMs }),
    },
    database: options.database ?? (await backend.freshDatabase()),
  });
  const deps = testDeps(config);
  const client = createRpcClient(deps);
  const store = await openStore(config, { metrics: deps.metrics });
  // Tests of the SQLite backend also read the file directly; every backend has the reader.
  const db =
    backend.name === "sqlite"
      ? openDatabase(config.database.path, config.chainId)
      : (noSqlite as Database);
  const reader = await backend.reader(config.database);
  const health = createHealth();
  const syncDeps = createSyncDeps({ ...deps, client }, store);
  const preconfirmedBackoff = createPreconfirmedBackoff(config.realtime.pendingPollIntervalMs);
  const follower = createHeadFollower({ ...syncDeps, health, preconfirmedBackoff });
  const pending = createPreconfirmedIndexer({
    ...syncDeps,
    preconfirmedBackoff,
    health,
    lastCanonicalBlock: follower.lastAppliedBlock,
    canonicalHashAt: follower.hashAt,
    onCanonicalHead: follower.onApplied,
  });
  const running = follower.run();
  if (config.realtime.pendingPollIntervalMs > 0) {
    void pending.pollForever().catch(() => undefined);
    void pending.watchForever().catch(() => undefined);
  }
  if (config.rpc.preconfWs !== undefined) pending.subscribe(config.rpc.preconfWs);
  const outcome = running.then(
    () => undefined,
    (error: unknown) => error,
  );
  const stop = async () => {
    await deps.shutdown.kill();
    await outcome;
    await store.close();
    await reader.close();
    if (backend.name === "sqlite") db.close();
  };
  open.push({ stop });
  const payer = createPayer(devnet);
  await waitFor(() => health.notReadyReason() === undefined, 10_000, "catch-up");
  return { devnet, db, reader, deps, payer, outcome, stop, config, health, pending };
}
