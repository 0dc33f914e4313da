import { describe, expect, test } from "vitest";
import {
  importSpecifiers,
  runtimeImportSpecifiers,
  scriptsImportGraph,
  srcImportGraph,
} from "../helpers/sourceImports.js";

const isBackend = (file: string) =>
  file.startsWith("store/sqlite/") || file.startsWith("store/postgres/");
const backendOf = (file: string) => file.split("/")[1];
/** A migration step (schemaV*.ts); the runners beside them (migrations.ts, migrate.ts) are runtime's way in. */
const isMigration = (file: string) =>
  /^store\/(sqlite|postgres)\/migrations\/schemaV\d+\.ts$/.test(file);

/**
 * The floors of the house, the ground first (paths relative to src/; scripts/ as `scripts/`): a
 * file imports files of its own floor or of the floors below, never of one above. The way a log
 * travels runs down them: the faces start the sync paths, which fetch through chain/, decode into
 * rows/ and write through store/.
 */
const FLOORS: ReadonlyArray<{ floor: string; holds: readonly string[] }> = [
  { floor: "rows", holds: ["rows/"] },
  { floor: "errors", holds: ["errors/"] },
  { floor: "config", holds: ["config/", "blockRanges.ts"] },
  { floor: "ops", holds: ["ops/"] },
  { floor: "chain", holds: ["chain/", "common.ts"] },
  { floor: "decode", holds: ["decode/"] },
  { floor: "store", holds: ["store/"] },
  { floor: "sync", holds: ["sync/", "attribution/"] },
  { floor: "services", holds: ["authorization/", "settle/", "webhooks/"] },
  { floor: "faces", holds: ["cli/", "devnet/", "statusPage/", "daemon.ts", "scripts/"] },
];

/**
 * Imports that run up a floor, each with its reason. Every entry must still name an import that
 * exists: when the import goes, so does its entry.
 */
const UPWARD_EXCEPTIONS: ReadonlyArray<{ edge: string; reason: string }> = [];

/**
 * Imports of a store backend from outside the store (scripts/ included), each with its reason.
 * None today: the benchmark's rows go through the seam as the daemon does (openStore.ts).
 */
const BACKEND_EXCEPTIONS: ReadonlyArray<{ edge: string; reason: string }> = [];

/** The index of the floor a file stands on; -1 for a file on none (a new folder must be placed). */
function floorOf(file: string): number {
  return FLOORS.findIndex(({ holds }) =>
    holds.some((prefix) => (prefix.endsWith("/") ? file.startsWith(prefix) : file === prefix)),
  );
}

/**
 * The store's seam as rules over the import graph (paths relative to src/), one message per
 * violation:
 * - outside store/, nothing imports a backend (store/sqlite, store/postgres); inside store/ but
 *   outside the backends, only openStore.ts (the composition point) does;
 * - a backend imports nothing of the other;
 * - nothing outside a migrations/ folder imports a migration step: live statements never change
 *   when a migration is edited;
 * - nothing imports a file of a floor above its own (FLOORS), and every file stands on a floor.
 * `exceptions` are edges left alone (UPWARD_EXCEPTIONS, BACKEND_EXCEPTIONS).
 */
function boundaryViolations(
  graph: ReadonlyMap<string, readonly string[]>,
  exceptions: ReadonlySet<string> = new Set(),
): string[] {
  const violations: string[] = [];
  for (const [file, imports] of graph) {
    const floor = floorOf(file);
    if (floor === -1) violations.push(`${file} stands on no floor: place its folder in FLOORS`);
    for (const target of imports) {
      const edge = `${file} imports ${target}`;
      if (exceptions.has(edge)) continue;
      if (isBackend(target) && !isBackend(file) && file !== "store/openStore.ts")
        violations.push(`${edge}: only store/openStore.ts may import a backend`);
      if (isBackend(target) && isBackend(file) && backendOf(target) !== backendOf(file))
        violations.push(`${edge}: a backend imports nothing of the other`);
      if (isMigration(target) && !file.includes("/migrations/"))
        violations.push(`${edge}: a runtime file imports a migration`);
      if (floor !== -1 && floorOf(target) > floor)
        violations.push(
          `${edge}: ${FLOORS[floor]!.floor} is below ${FLOORS[floorOf(target)]!.floor}`,
        );
    }
  }
  return violations;
}

/**
 * decode/ is bytes to rows, pure: at run time it imports only rows/, blockRanges.ts and itself (of
 * chain/ it may name types: the answers it reads). `graph` holds only the run-time imports.
 */
function impureDecodeImports(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const pure = (target: string) => /^(decode|rows)\//.test(target) || target === "blockRanges.ts";
  return [...graph].flatMap(([file, imports]) =>
    file.startsWith("decode/")
      ? imports
          .filter((target) => !pure(target))
          .map((target) => `${file} imports ${target} at run time`)
      : [],
  );
}

const edgesOf = (graph: ReadonlyMap<string, readonly string[]>) =>
  new Set(
    [...graph].flatMap(([file, imports]) => imports.map((target) => `${file} imports ${target}`)),
  );

/** Each import cycle found (type-only imports count: a cycle of types is still two modules that must be read together). */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const cycles: string[] = [];
  const onPath: string[] = [];
  const done = new Set<string>();
  const visit = (file: string) => {
    onPath.push(file);
    for (const target of graph.get(file) ?? []) {
      if (onPath.includes(target))
        cycles.push([...onPath.slice(onPath.indexOf(target)), target].join(" -> "));
      else if (!done.has(target) && graph.has(target)) visit(target);
    }
    onPath.pop();
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return cycles;
}

describe("the store's import boundaries and the floors", () => {
  test("src/ keeps them", () => {
    const graph = srcImportGraph();
    expect(graph.get("store/openStore.ts")).toContain("store/sqlite/sqliteStore.ts");
    expect(boundaryViolations(graph, new Set(UPWARD_EXCEPTIONS.map(({ edge }) => edge)))).toEqual(
      [],
    );
  });

  test("scripts/ keeps them", () => {
    const graph = scriptsImportGraph();
    expect(graph.get("scripts/bench/main.ts")?.length).toBeGreaterThan(0);
    expect(boundaryViolations(graph, new Set(BACKEND_EXCEPTIONS.map(({ edge }) => edge)))).toEqual(
      [],
    );
  });

  test("every exception names an import that exists", () => {
    const edges = new Set([...edgesOf(srcImportGraph()), ...edgesOf(scriptsImportGraph())]);
    expect(
      [...UPWARD_EXCEPTIONS, ...BACKEND_EXCEPTIONS]
        .map(({ edge }) => edge)
        .filter((edge) => !edges.has(edge)),
    ).toEqual([]);
  });

  test("decode/ is bytes to rows: it imports nothing at run time but rows/", () => {
    expect(impureDecodeImports(srcImportGraph({ runtimeOnly: true }))).toEqual([]);
  });

  test("each rule names the import that breaks it", () => {
    const graph = new Map([
      ["sync/historical/backfill.ts", ["store/sqlite/logWriter.ts", "store/store.ts"]],
      ["store/store.ts", ["store/types.ts", "store/postgres/lifecycle.ts"]],
      ["store/openStore.ts", ["store/sqlite/sqliteStore.ts", "store/postgres/openPostgres.ts"]],
      [
        "store/postgres/lifecycle.ts",
        ["store/sqlite/migrations/schemaV8.ts", "store/liveStatus.ts"],
      ],
      [
        "store/sqlite/webhookOutbox.ts",
        ["store/sqlite/migrations/schemaV11.ts", "store/sqlite/migrations/migrations.ts"],
      ],
      [
        "store/sqlite/migrations/schemaV11.ts",
        ["store/sqlite/migrations/schemaV7.ts", "store/sqlite/webhookTriggers.ts"],
      ],
      ["decode/packAttribution.ts", ["rows/packedAttribution.ts", "store/types.ts"]],
      ["errors/store.ts", ["rows/writerHolder.ts", "errors/base.ts"]],
      ["ops/statusPage.ts", ["store/store.ts", "sync/watchScope.ts"]],
      ["scripts/bench/reorgRollback.ts", ["store/sqlite/lifecycle.ts", "store/openStore.ts"]],
      ["misc/helpers.ts", ["rows/logRow.ts"]],
    ]);
    expect(
      boundaryViolations(graph, new Set(["ops/statusPage.ts imports sync/watchScope.ts"])),
    ).toEqual([
      "sync/historical/backfill.ts imports store/sqlite/logWriter.ts: only store/openStore.ts may import a backend",
      "store/store.ts imports store/postgres/lifecycle.ts: only store/openStore.ts may import a backend",
      "store/postgres/lifecycle.ts imports store/sqlite/migrations/schemaV8.ts: a backend imports nothing of the other",
      "store/postgres/lifecycle.ts imports store/sqlite/migrations/schemaV8.ts: a runtime file imports a migration",
      "store/sqlite/webhookOutbox.ts imports store/sqlite/migrations/schemaV11.ts: a runtime file imports a migration",
      "decode/packAttribution.ts imports store/types.ts: decode is below store",
      "ops/statusPage.ts imports store/store.ts: ops is below store",
      "scripts/bench/reorgRollback.ts imports store/sqlite/lifecycle.ts: only store/openStore.ts may import a backend",
      "misc/helpers.ts stands on no floor: place its folder in FLOORS",
    ]);
  });

  test("decode/ may name chain/'s types, never run its code", () => {
    const source = [
      `import type { LogFilter } from "../chain/getLogs.js";`,
      `import { type NodeError } from "../chain/jsonRpcAnswer.js";`,
      `import { answerText } from "../chain/httpTransport.js";`,
      `import type { PackedRows } from "../rows/packedRows.js";`,
    ].join("\n");
    expect(runtimeImportSpecifiers(source)).toEqual([
      "../chain/jsonRpcAnswer.js",
      "../chain/httpTransport.js",
    ]);
    const graph = new Map([
      [
        "decode/windowAnswer.ts",
        ["chain/httpTransport.ts", "rows/packedRows.ts", "blockRanges.ts", "decode/cbor.ts"],
      ],
    ]);
    expect(impureDecodeImports(graph)).toEqual([
      "decode/windowAnswer.ts imports chain/httpTransport.ts at run time",
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
    expect(importSpecifiers(source)).toEqual([
      "./a.js",
      "../b.js",
      "./sideEffect.js",
      "./d.js",
      "./e.js",
      "./f.js",
    ]);
  });
});

describe("import cycles", () => {
  test("src/ has none", () => {
    expect(importCycles(srcImportGraph())).toEqual([]);
  });

  test("a cycle is named file by file", () => {
    const graph = new Map([
      ["decode/toLogRows.ts", ["decode/preconfirmedTwins.ts"]],
      ["decode/preconfirmedTwins.ts", ["decode/toLogRows.ts", "rows/rpcLog.ts"]],
      ["rows/rpcLog.ts", []],
    ]);
    expect(importCycles(graph)).toEqual([
      "decode/toLogRows.ts -> decode/preconfirmedTwins.ts -> decode/toLogRows.ts",
    ]);
  });
});
