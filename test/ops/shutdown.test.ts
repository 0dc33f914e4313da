import { afterEach, describe, expect, it } from "vitest";
import { createShutdown, SHUTDOWN_LISTENER_BOUND, sleep } from "../../src/ops/shutdown.js";

/** The MaxListenersExceededWarning texts the process emits while `run` runs (warnings arrive on a later tick). */
async function leakWarnings(run: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => {
    if (warning.name === "MaxListenersExceededWarning") warnings.push(warning.message);
  };
  process.on("warning", onWarning);
  try {
    await run();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off("warning", onWarning);
  }
  return warnings;
}

describe("the shutdown signal's listeners", () => {
  const shutdowns: Array<ReturnType<typeof createShutdown>> = [];
  afterEach(async () => {
    for (const shutdown of shutdowns.splice(0)) await shutdown.kill();
  });

  it("holds a busy daemon's waits at once without a leak warning, and every wait ends at shutdown", async () => {
    const shutdown = createShutdown();
    shutdowns.push(shutdown);
    let waits: Array<Promise<void>> = [];
    const warnings = await leakWarnings(async () => {
      waits = Array.from({ length: 200 }, () => sleep(60_000, shutdown.signal));
    });
    expect(warnings).toEqual([]);
    await shutdown.kill();
    const ended = await Promise.allSettled(waits);
    expect(ended.every((result) => result.status === "rejected")).toBe(true);
  });

  it("still warns of a leak: listeners past the bound that are never removed", async () => {
    const shutdown = createShutdown();
    shutdowns.push(shutdown);
    const warnings = await leakWarnings(async () => {
      for (let i = 0; i <= SHUTDOWN_LISTENER_BOUND; i++)
        shutdown.signal.addEventListener("abort", () => undefined);
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("abort");
  });
});
