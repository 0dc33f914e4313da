import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createMetrics } from "../../src/ops/metrics.js";

const ROOT = join(import.meta.dirname, "..", "..");
type Panel = { title: string; targets?: Array<{ expr: string }> };
const dashboard = JSON.parse(
  readFileSync(join(ROOT, "config", "grafana-dashboard.json"), "utf8"),
) as { uid: string; panels: Panel[] };

/** Every series name the daemon's registry exports: histograms also as _bucket, _sum and _count. */
async function exportedSeries(): Promise<Set<string>> {
  const metrics = createMetrics();
  const names = new Set<string>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === "histogram")
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

describe("config/grafana-dashboard.json", () => {
  test("every query names only metrics the daemon exports, and every panel has one", async () => {
    const exported = await exportedSeries();
    const unknown: string[] = [];
    for (const panel of dashboard.panels) {
      expect(panel.targets?.length ?? 0, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets!) {
        const named = expr.match(/\bflashindex_[a-z0-9_]+/g) ?? [];
        expect(named.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
        unknown.push(
          ...named.filter((name) => !exported.has(name)).map((name) => `${panel.title}: ${name}`),
        );
      }
    }
    expect(unknown).toEqual([]);
  });

  test("it has the panels the issue lists", () => {
    const titles = dashboard.panels.map((p) => p.title.toLowerCase()).join("\n");
    for (const wanted of [
      "lag (blocks)",
      "lag (seconds)",
      "logs indexed by status",
      "rpc requests",
      "rpc errors",
      "window size",
      "ingest latency",
      "lead time",
      "reorgs",
      "reorg depth",
      "dropped pre-confirmations",
      "attribution",
      "db write time",
      "db size",
      "webhook deliveries",
    ])
      expect(titles).toContain(wanted);
  });

  test("the compose example provisions it", () => {
    const compose = readFileSync(join(ROOT, "config", "docker-compose.example.yml"), "utf8");
    expect(compose).toContain(
      "./grafana-dashboard.json:/var/lib/grafana/dashboards/flashindex.json:ro",
    );
    expect(
      readFileSync(join(ROOT, "config", "grafana", "dashboards", "flashindex.yml"), "utf8"),
    ).toContain("path: /var/lib/grafana/dashboards");
  });
});
