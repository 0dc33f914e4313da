import { describe, expect, test } from "vitest";
import { createHealth } from "../../src/ops/health.js";
import { startHeartbeat } from "../../src/ops/heartbeat.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createMemoryLogger } from "../helpers/context.js";

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("heartbeat", () => {
  test("startHeartbeat() says nothing while catching up, then logs head, lag and what happened since the last beat", async () => {
    const { logger, lines } = createMemoryLogger("info");
    const metrics = createMetrics({ defaultMetrics: false });
    const health = createHealth();
    const heartbeat = startHeartbeat({ logger, metrics, health }, 40);
    try {
      metrics.logsIndexed.inc({ event: "Transfer", status: "finalized" }, 500);
      await wait(100);
      expect(lines.filter((l) => l.msg === "Heartbeat")).toEqual([]);
      health.markBackfillCaughtUp(true);
      metrics.chainHeadBlock.set(1234);
      metrics.lagSeconds.set(1.6);
      await wait(60);
      metrics.logsIndexed.inc({ event: "Transfer", status: "preconfirmed" }, 3);
      metrics.logsIndexed.inc({ event: "AuthorizationUsed", status: "confirmed" }, 2);
      metrics.reorgs.inc();
      metrics.droppedPreconfirmed.inc();
      await wait(60);
      const beats = lines.filter((l) => l.msg === "Heartbeat");
      expect(beats.length).toBeGreaterThanOrEqual(2);
      expect(beats[0]).toMatchObject({
        level: "info",
        head_block: 1234,
        lag_seconds: 2,
        finalized: 0,
      });
      const sum = (key: string) => beats.reduce((a, b) => a + (b[key] as number), 0);
      expect([
        sum("preconfirmed"),
        sum("confirmed"),
        sum("finalized"),
        sum("reorgs"),
        sum("dropped"),
      ]).toEqual([3, 2, 0, 1, 1]);
    } finally {
      heartbeat.stop();
    }
  });
});
