import { Writable } from "node:stream";
import { parseConfig } from "../../src/config/parseConfig.js";
import type { Config } from "../../src/config/types.js";
import { createLogger } from "../../src/ops/logger.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createShutdown } from "../../src/ops/shutdown.js";
import type { Database } from "../../src/store/sqlite/openDatabase.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import { createSyncDeps, type SyncDeps } from "../../src/sync/syncDeps.js";

/** A logger that keeps its JSON lines in memory, so tests can assert on them. */
export function createMemoryLogger(level: Config["logLevel"] = "debug") {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split("\n"))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: createLogger(level, stream), lines };
}

/** A validated config for tests: Base's chain id, fast retries. */
export function testConfig(
  overrides: Record<string, unknown> & { rpc: Record<string, unknown> },
): Config {
  return parseConfig(
    {
      chainId: 8453,
      tokens: [{ address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", startBlock: 0 }],
      logLevel: "debug",
      ...overrides,
      rpc: { retry: { maxAttempts: 4, initialDelayMs: 1, maxDelayMs: 5 }, ...overrides.rpc },
    },
    "test",
  );
}

/** The dependency bag with an in-memory logger and a fresh metrics registry. */
export function testDeps(config: Config) {
  const { logger, lines } = createMemoryLogger();
  return {
    config,
    logger,
    lines,
    metrics: createMetrics({ defaultMetrics: false }),
    shutdown: createShutdown(),
  };
}

/** The sync stages' bag over an open SQLite connection: the SQLite store and the shared services built on it. */
export function withSqliteStore<D extends Omit<SyncDeps, "store" | "attributor">>(
  deps: D,
  db: Database,
): D & SyncDeps {
  const store = createSqliteStore({ db, chainId: deps.config.chainId, metrics: deps.metrics });
  return { ...deps, ...createSyncDeps(deps, store) };
}
