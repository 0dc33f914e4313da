import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { startDemoTraffic } from "../../src/devnet/demoTraffic.js";
import { startDevnet } from "../../src/devnet/startDevnet.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { freePort } from "../helpers/postgres.js";

/** Debian's prometheus package (the server; promtool comes with it). */
const PROMETHEUS = "/usr/bin/prometheus";
const hasPrometheus = spawnSync(PROMETHEUS, ["--version"]).status === 0;
if (!hasPrometheus)
  console.warn(
    `Skipping the Prometheus scrape test: ${PROMETHEUS} is not installed (apt-get install -y prometheus; .ci/run does it).`,
  );

type QueryAnswer = {
  status: string;
  data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
};
type RulesAnswer = {
  status: string;
  data: { groups: Array<{ name: string; rules: Array<{ name: string; health: string }> }> };
};

describe.skipIf(!hasPrometheus)(
  "a real Prometheus server (skipped without Debian's prometheus package)",
  () => {
    test("scrapes a live daemon, answers a query with its series, and loads config/prometheus-rules.yml healthy", async () => {
      const devnet = await startDevnet({ blockTimeMs: 500, flashblockIntervalMs: 100 });
      const traffic = startDemoTraffic(devnet, {
        paymentsPerSecond: 5,
        reorgEverySeconds: 0,
        dropEverySeconds: 0,
      });
      const dir = mkdtempSync(join(tmpdir(), "flashindex-prometheus-"));
      const metricsPort = await freePort();
      const daemon = spawnCli([
        "start",
        "--config",
        writeConfig(dir, {
          chainId: devnet.chainId,
          rpc: { http: [devnet.httpUrl], ws: devnet.wsUrl, preconfWs: devnet.wsUrl },
          tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
          finality: { depth: 4 },
          database: { path: join(dir, "index.db") },
          metrics: { port: metricsPort },
        }),
      ]);
      const prometheusPort = await freePort();
      // The shipped rules, loaded as the example config loads them (a path relative to the config file).
      copyFileSync(
        join(import.meta.dirname, "..", "..", "config", "prometheus-rules.yml"),
        join(dir, "prometheus-rules.yml"),
      );
      writeFileSync(
        join(dir, "prometheus.yml"),
        [
          "global:",
          "  scrape_interval: 1s",
          "  evaluation_interval: 1s",
          "rule_files:",
          "  - prometheus-rules.yml",
          "scrape_configs:",
          "  - job_name: flashindex",
          "    static_configs:",
          `      - targets: ["127.0.0.1:${metricsPort}"]`,
          "",
        ].join("\n"),
      );
      const prometheus = spawn(
        PROMETHEUS,
        [
          `--config.file=${join(dir, "prometheus.yml")}`,
          `--storage.tsdb.path=${join(dir, "tsdb")}`,
          `--web.listen-address=127.0.0.1:${prometheusPort}`,
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let prometheusLog = "";
      prometheus.stderr!.on("data", (chunk: Buffer) => (prometheusLog += chunk.toString()));
      const api = `http://127.0.0.1:${prometheusPort}/api/v1`;
      const query = async (promql: string) =>
        (await (
          await fetch(`${api}/query?query=${encodeURIComponent(promql)}`)
        ).json()) as QueryAnswer;
      try {
        const indexed = await waitFor(
          async () => {
            const answer = await query(
              'sum(flashindex_logs_indexed_total{job="flashindex"})',
            ).catch(() => undefined);
            const value = Number(answer?.data.result[0]?.value[1] ?? 0);
            return value > 0 ? value : undefined;
          },
          45_000,
          `indexed logs in Prometheus (its log: ${prometheusLog.slice(-500)})`,
          250,
        );
        expect(indexed).toBeGreaterThan(0);
        const up = await query('up{job="flashindex"}');
        expect(up.data.result).toEqual([
          {
            metric: { __name__: "up", instance: `127.0.0.1:${metricsPort}`, job: "flashindex" },
            value: [expect.any(Number), "1"],
          },
        ]);
        const rules = (await (await fetch(`${api}/rules`)).json()) as RulesAnswer;
        const loaded = rules.data.groups.flatMap((group) => group.rules);
        expect(loaded.length).toBeGreaterThan(8);
        await waitFor(
          async () => {
            const again = (await (await fetch(`${api}/rules`)).json()) as RulesAnswer;
            return (
              again.data.groups
                .flatMap((group) => group.rules)
                .every((rule) => rule.health === "ok") || undefined
            );
          },
          10_000,
          "every rule evaluated without error",
        );
        // A live, syncing daemon raises none of the critical alerts.
        const firing = (
          await query('ALERTS{alertstate="firing", severity="critical"}')
        ).data.result.map((r) => r.metric.alertname);
        expect(firing).toEqual([]);
      } finally {
        prometheus.kill("SIGTERM");
        daemon.kill("SIGTERM");
        traffic.stop();
      }
      expect(await new Promise((resolve) => daemon.on("exit", resolve))).toBe(0);
      await devnet.stop();
    }, 120_000);
  },
);
