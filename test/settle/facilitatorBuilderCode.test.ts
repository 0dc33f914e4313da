import { afterAll, describe, expect, test } from "vitest";
import { createMetrics } from "../../src/ops/metrics.js";
import { facilitatorBuilderCode } from "../../src/settle/builderCode.js";
import { openStore } from "../../src/store/openStore.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { createMemoryLogger, testConfig } from "../helpers/context.js";

const RELAYER = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955";
const STRANGER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

describe.each(BACKENDS)("the facilitator's own builder code (w) on $name", (backend) => {
  afterAll(() => stopFileBackends());

  test("is facilitator.builderCode when set, else the code flashindex register stored for the relayer wallet, else none", async () => {
    const config = testConfig({
      rpc: { http: ["http://127.0.0.1:9"] },
      database: await backend.freshDatabase(),
    });
    const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
    const { logger, lines } = createMemoryLogger();
    try {
      expect(await facilitatorBuilderCode({ store, logger }, undefined, RELAYER)).toBeUndefined();
      await store.saveRegistration(STRANGER, "bc_stranger", 1);
      expect(await facilitatorBuilderCode({ store, logger }, undefined, RELAYER)).toBeUndefined();
      // Registered under its lower-case address: the lookup does not depend on the checksum.
      await store.saveRegistration(RELAYER.toLowerCase() as `0x${string}`, "bc_relayer7", 2);
      expect(await facilitatorBuilderCode({ store, logger }, undefined, RELAYER)).toBe(
        "bc_relayer7",
      );
      expect(await facilitatorBuilderCode({ store, logger }, "shop_facilitator", RELAYER)).toBe(
        "shop_facilitator",
      );
      // A stored code the extension cannot carry is left out, with a warning naming it.
      await store.saveRegistration(RELAYER, "BC-Not-Allowed", 3);
      expect(await facilitatorBuilderCode({ store, logger }, undefined, RELAYER)).toBeUndefined();
      expect(lines).toContainEqual(
        expect.objectContaining({
          msg: "Skipped registered builder code",
          builder_code: "BC-Not-Allowed",
        }),
      );
    } finally {
      await store.close();
    }
  }, 60_000);
});
