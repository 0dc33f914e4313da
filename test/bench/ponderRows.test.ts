import { describe, expect, test } from "vitest";
import { ponderLine } from "../../scripts/bench/ponderRows.js";

describe("Ponder's rows", () => {
  test("ponderLine() gives Ponder's figures and flashindex's ratio to it", () => {
    const line = ponderLine(
      {
        name: "Ponder 0.16.10, anvil end to end",
        logs: 200_000,
        durationMs: 174_860,
        peakRssMb: 1_006,
        cpuSeconds: 54.5,
      },
      { flashindexLogsPerSecond: 12_326, flashindexConfiguration: "defaults, the row above" },
    );
    expect(line.logsPerSecond).toBeCloseTo(1_143.8, 1);
    expect(line.measurement).toBe(
      "Ponder 0.16.10, anvil end to end, wall time to ready (every log indexed, indexes built); flashindex (defaults, the row above) 10.8× its logs/s",
    );
    expect(line).toMatchObject({
      logs: 200_000,
      seconds: 174.86,
      peakRssMb: 1_006,
      cpuSeconds: 54.5,
    });
  });

  test("ponderLine() keeps a blocked run as a row that says why, on one table line", () => {
    const line = ponderLine({
      name: "Ponder, anvil end to end",
      blocked: "npm install failed | exit 1\nETIMEDOUT",
    });
    expect(line).toEqual({
      measurement: "Ponder, anvil end to end: blocked: npm install failed / exit 1 ETIMEDOUT",
      logs: 0,
    });
  });
});
