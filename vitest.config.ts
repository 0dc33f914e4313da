import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Tests start real anvil processes and SQLite files; two cores are all we have.
    fileParallelism: true,
    maxWorkers: 2,
    // CLI tests spawn the real CLI many times; on a loaded 2-core machine that takes a while.
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // One PostgreSQL for the run, started when a suite first asks for it (test/helpers/postgresBroker.ts).
    globalSetup: ["test/helpers/postgresBroker.ts"],
  },
});
