import { chmodSync, mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort, startTestPostgres } from "./postgres.js";
import { sharedPostgresUrl, startPostgresBroker } from "./postgresBroker.js";

/** A port held on both loopback addresses, so PostgreSQL can bind neither. */
let taken: number;
const holders: Server[] = [];
beforeAll(async () => {
  taken = await freePort();
  for (const host of ["127.0.0.1", "::1"]) {
    const holder = createServer();
    await new Promise<void>((resolve) =>
      holder.once("error", () => resolve()).listen(taken, host, () => resolve()),
    );
    holders.push(holder);
  }
});
afterAll(() => {
  for (const holder of holders) holder.close();
});

describe("the tests' PostgreSQL fails at once, with the reason, when it cannot start", () => {
  test.skipIf(process.getuid?.() !== 0)(
    "a data directory the postgres user cannot enter: initdb's words",
    async () => {
      const rootOnly = mkdtempSync(join(tmpdir(), "flashindex-root-only-"));
      chmodSync(rootOnly, 0o700);
      await expect(startTestPostgres({ parent: rootOnly })).rejects.toThrow(
        /^PostgreSQL for the tests could not be initialised \(data directory under .*flashindex-root-only-.*\): .*Permission denied/,
      );
    },
  );

  test("a port another process holds: the server's own words, not an empty rejection", async () => {
    await expect(startTestPostgres({ port: taken })).rejects.toThrow(
      new RegExp(
        `^PostgreSQL for the tests did not start \\(.*port ${taken}\\): .*could not (bind|create)`,
      ),
    );
  });

  test("the run's broker starts it once: every suite that asks gets the same reason, and nothing is tried again", async () => {
    let starts = 0;
    const broker = await startPostgresBroker(() => (starts++, startTestPostgres({ port: taken })));
    try {
      const answers = await Promise.allSettled([
        sharedPostgresUrl(broker.url),
        sharedPostgresUrl(broker.url),
      ]);
      await expect(sharedPostgresUrl(broker.url)).rejects.toThrow(
        /^no PostgreSQL for this test run, so every Postgres suite fails: PostgreSQL for the tests did not start/,
      );
      for (const answer of answers)
        expect(answer).toMatchObject({
          status: "rejected",
          reason: { message: expect.stringMatching(/could not (bind|create)/) },
        });
      expect(starts).toBe(1);
    } finally {
      await broker.close();
    }
  });
});
