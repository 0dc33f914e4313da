#!/usr/bin/env bash
# A smoke run on the Node first on PATH (CI: the oldest supported line, 22), after `npm ci`: the
# typecheck; the test files over better-sqlite3 on worker threads (the window writer, the
# checkpointer and the maintenance thread: where better-sqlite3 12 aborted on Node 24); and fresh
# `flashindex start`s on the devnet that must store logs and stop cleanly on SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/../.."
npm run typecheck
npx vitest run test/cli/nodeSupport.test.ts \
  test/store/windowCommit.test.ts test/store/checkpoints.test.ts test/store/maintenance.test.ts
node scripts/buildIfStale.mjs
node scripts/ci/devnetStarts.mjs --runs 3 --seconds 8
