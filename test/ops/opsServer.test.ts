import { readFileSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { startDemoTraffic } from "../../src/devnet/demoTraffic.js";
import { startDevnet } from "../../src/devnet/startDevnet.js";
import { createHealth, HEAD_STALE_AFTER_MS } from "../../src/ops/health.js";
import { startOpsServer } from "../../src/ops/httpServer.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { createMemoryLogger } from "../helpers/context.js";
import { waitFor } from "../helpers/devnetPayments.js";

afterAll(() => stopFileBackends());

/** Metric names the operations guide documents (its Metrics section: the table and the example alerts). */
function documentedMetrics(): string[] {
  const guide = readFileSync(
    join(import.meta.dirname, "..", "..", "docs", "operations.md"),
    "utf8",
  );
  const start = guide.indexOf("\n## Metrics\n");
  const section = guide.slice(start, guide.indexOf("\n## ", start + 1));
  return [...section.matchAll(/`(flashindex_[a-z_]+)`/g)]
    .map((m) => m[1]!)
    .filter((name, i, all) => all.indexOf(name) === i);
}

describe("ops server", () => {
  test("/metrics exposes every metric the operations guide documents", async () => {
    const metrics = createMetrics();
    const server = await startOpsServer(
      { logger: createMemoryLogger().logger, metrics, health: createHealth() },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      const body = await (await fetch(`${server.url}/metrics`)).text();
      const documented = documentedMetrics();
      expect(documented.length).toBeGreaterThan(20);
      for (const name of documented) expect(body, name).toContain(`# HELP ${name} `);
      expect(body).toContain("flashindex_process_cpu_user_seconds_total");
    } finally {
      await server.close();
    }
  });

  test("/readyz says why it is not ready, and flips to ready once caught up with a fresh head", async () => {
    let now = 1_000_000;
    const health = createHealth(() => now);
    const server = await startOpsServer(
      {
        logger: createMemoryLogger().logger,
        metrics: createMetrics({ defaultMetrics: false }),
        health,
      },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      const ready = async () => {
        const response = await fetch(`${server.url}/readyz`);
        return [response.status, (await response.text()).trim()];
      };
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect(await ready()).toEqual([503, "backfill has not caught up with the finalized block"]);
      health.markBackfillCaughtUp(true);
      health.markHeadSeen();
      expect(await ready()).toEqual([200, "ready"]);
      now += HEAD_STALE_AFTER_MS + 1;
      expect((await ready())[0]).toBe(503);
      expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe.each(BACKENDS)("the metrics server of a daemon on $name", (backend) => {
  test("the daemon's metrics move as the devnet's payments are indexed, the database size included, and SIGTERM exits 0", async () => {
    const devnet = await startDevnet({ blockTimeMs: 500, flashblockIntervalMs: 100 });
    const traffic = startDemoTraffic(devnet, {
      paymentsPerSecond: 10,
      reorgEverySeconds: 0,
      dropEverySeconds: 0,
    });
    const dir = mkdtempSync(join(tmpdir(), "flashindex-ops-"));
    const path = writeConfig(dir, {
      chainId: devnet.chainId,
      rpc: { http: [devnet.httpUrl], ws: devnet.wsUrl, preconfWs: devnet.wsUrl },
      tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
      finality: { depth: 4 },
      database:
        backend.name === "sqlite" ? { path: join(dir, "ops.db") } : await backend.freshDatabase(),
      metrics: { port: 0 },
    });
    const child = spawnCli(["start", "--config", path]);
    try {
      const url = await waitFor(
        () =>
          /"msg":"Started metrics and health server","url":"([^"]+)"/.exec(
            child.output().stdout,
          )?.[1],
        20_000,
        "metrics server",
      );
      const value = async (name: string) => {
        const body = await (await fetch(`${url}/metrics`)).text();
        return body
          .split("\n")
          .filter((line) => line.startsWith(name))
          .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
      };
      await waitFor(
        async () => (await value("flashindex_logs_indexed_total")) > 10,
        20_000,
        "logs indexed",
      );
      await waitFor(
        async () => (await value("flashindex_preconf_logs_total")) > 0,
        20_000,
        "pre-confirmed logs",
      );
      expect(await value("flashindex_chain_head_block")).toBeGreaterThan(0);
      expect(await value("flashindex_db_size_bytes")).toBeGreaterThan(0);
      await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 20_000, "ready");
    } finally {
      child.kill("SIGTERM");
      traffic.stop();
    }
    expect(await new Promise((resolve) => child.on("exit", resolve))).toBe(0);
    await devnet.stop();
  }, 90_000);
});
