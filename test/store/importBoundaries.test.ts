import { describe, expect, test } from "vitest";
import { importSpecifiers, srcImportGraph } from "../helpers/sourceImports.js";

const isBackend = (file: string) => file.startsWith("store/sqlite/") || file.startsWith("store/postgres/");
const backendOf = (file: string) => file.split("/")[1];
/** A migration step (schemaV*.ts); the runners beside them (migrations.ts, migrate.ts) are runtime's way in. */
const isMigration = (file: string) => /^store\/(sqlite|postgres)\/migrations\/schemaV\d+\.ts$/.test(file);
/** The store's contract: what every layer may import. */
const isContract = (file: string) => file === "store/store.ts" || file === "store/types.ts";

/**
 * The store's seam as rules over the import graph (paths relative to src/), one message per
 * violation:
 * - outside store/, nothing imports a backend (store/sqlite, store/postgres); inside store/ but
 *   outside the backends, only openStore.ts (the composition point) does;
 * - a backend imports nothing of the other;
 * - nothing outside a migrations/ folder imports a migration step: live statements never change
 *   when a migration is edited;
 * - decode/ and ops/ import nothing of the store but its contract (store.ts, types.ts).
 */
function boundaryViolations(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const violations: string[] = [];
  for (const [file, imports] of graph) {
    for (const target of imports) {
      const edge = `${file} imports ${target}`;
      if (isBackend(target) && !isBackend(file) && file !== "store/openStore.ts") violations.push(`${edge}: only store/openStore.ts may import a backend`);
      if (isBackend(target) && isBackend(file) && backendOf(target) !== backendOf(file)) violations.push(`${edge}: a backend imports nothing of the other`);
      if (isMigration(target) && !file.includes("/migrations/")) violations.push(`${edge}: a runtime file imports a migration`);
      if (/^(decode|ops)\//.test(file) && target.startsWith("store/") && !isContract(target)) violations.push(`${edge}: decode/ and ops/ import only the store's contract`);
    }
  }
  return violations;
}

/** Each import cycle found (type-only imports count: a cycle of types is still two modules that must be read together). */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const cycles: string[] = [];
  const onPath: string[] = [];
  const done = new Set<string>();
  const visit = (file: string) => {
    onPath.push(file);
    for (const target of graph.get(file) ?? []) {
      if (onPath.includes(target)) cycles.push([...onPath.slice(onPath.indexOf(target)), target].join(" -> "));
      else if (!done.has(target) && graph.has(target)) visit(target);
    }
    onPath.pop();
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return cycles;
}

describe("the store's import boundaries", () => {
  test("src/ keeps them", () => {
    const graph = srcImportGraph();
    expect(graph.get("store/openStore.ts")).toContain("store/sqlite/sqliteStore.ts");
    expect(boundaryViolations(graph)).toEqual([]);
  });

  test("each rule names the import that breaks it", () => {
    const graph = new Map([
      ["sync/backfill.ts", ["store/sqlite/logWriter.ts", "store/store.ts"]],
      ["store/store.ts", ["store/types.ts", "store/postgres/lifecycle.ts"]],
      ["store/openStore.ts", ["store/sqlite/sqliteStore.ts", "store/postgres/openPostgres.ts"]],
      ["store/postgres/lifecycle.ts", ["store/sqlite/migrations/schemaV8.ts", "store/liveStatus.ts"]],
      ["store/sqlite/webhookOutbox.ts", ["store/sqlite/migrations/schemaV11.ts", "store/sqlite/migrations/migrations.ts"]],
      ["store/sqlite/migrations/schemaV11.ts", ["store/sqlite/migrations/schemaV7.ts", "store/sqlite/webhookTriggers.ts"]],
      ["decode/windowDecoderThread.ts", ["store/types.ts", "store/insertCounts.ts"]],
      ["ops/statusPage.ts", ["store/store.ts"]],
    ]);
    expect(boundaryViolations(graph)).toEqual([
      "sync/backfill.ts imports store/sqlite/logWriter.ts: only store/openStore.ts may import a backend",
      "store/store.ts imports store/postgres/lifecycle.ts: only store/openStore.ts may import a backend",
      "store/postgres/lifecycle.ts imports store/sqlite/migrations/schemaV8.ts: a backend imports nothing of the other",
      "store/postgres/lifecycle.ts imports store/sqlite/migrations/schemaV8.ts: a runtime file imports a migration",
      "store/sqlite/webhookOutbox.ts imports store/sqlite/migrations/schemaV11.ts: a runtime file imports a migration",
      "decode/windowDecoderThread.ts imports store/insertCounts.ts: decode/ and ops/ import only the store's contract",
    ]);
  });

  test("the scan sees every form of import and skips comments", () => {
    const source = [
      `import type { A } from "./a.js";`,
      `import { b,`,
      `  c } from "../b.js";`,
      `import "./sideEffect.js";`,
      `export { d } from "./d.js";`,
      `export * from "./e.js";`,
      `const f = await import("./f.js");`,
      `import pg from "pg";`,
      `// import { g } from "./commented.js";`,
      `/** see import("./alsoCommented.js") */`,
    ].join("\n");
    expect(importSpecifiers(source)).toEqual(["./a.js", "../b.js", "./sideEffect.js", "./d.js", "./e.js", "./f.js"]);
  });
});

describe("import cycles", () => {
  test("src/ has none", () => {
    expect(importCycles(srcImportGraph())).toEqual([]);
  });

  test("a cycle is named file by file", () => {
    const graph = new Map([
      ["decode/logRow.ts", ["decode/preconfirmedTwins.ts"]],
      ["decode/preconfirmedTwins.ts", ["decode/logRow.ts", "chain/rpcLog.ts"]],
      ["chain/rpcLog.ts", []],
    ]);
    expect(importCycles(graph)).toEqual(["decode/logRow.ts -> decode/preconfirmedTwins.ts -> decode/logRow.ts"]);
  });
});
