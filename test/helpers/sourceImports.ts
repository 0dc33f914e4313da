import { readdirSync, readFileSync } from "node:fs";
import { join, posix, resolve } from "node:path";

/** The repository's src/ folder. */
export const SRC = resolve(import.meta.dirname, "../../src");
/** The repository's scripts/ folder (the benchmark, the build and CI helpers). */
export const SCRIPTS = resolve(import.meta.dirname, "../../scripts");

/**
 * The relative module specifiers a TypeScript source names: static imports and re-exports (type-only
 * ones included: they are dependencies too), side-effect imports and `import()` calls. Comments are
 * skipped, so a file may mention an import in prose.
 */
export function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const specifiers: string[] = [];
  for (const match of code.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*"([^"]+)"/g)) {
    if (match[1]!.startsWith(".")) specifiers.push(match[1]!);
  }
  return specifiers;
}

/**
 * The specifiers of the imports that stay at run time: `importSpecifiers` less the `import type`
 * and `export type` statements, which the compiler erases.
 */
export function runtimeImportSpecifiers(source: string): string[] {
  return importSpecifiers(
    source.replace(/\b(?:import|export)\s+type\s*\{[^}]*\}\s*from\s*"[^"]+"/g, ""),
  );
}

/** Every .ts file under `dir` (and .mjs with `withMjs`), as paths relative to it with forward slashes. */
export function sourceFiles(dir: string, withMjs = false): string[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((file) => file.endsWith(".ts") || (withMjs && file.endsWith(".mjs")))
    .map((file) => file.split("\\").join("/"))
    .sort();
}

/**
 * The local import graph of src/: each file (relative to src/, e.g. `store/openStore.ts`) with the
 * files it imports, resolved the way NodeNext resolves them (`./x.js` names `./x.ts`); with
 * `runtimeOnly`, only the imports that stay at run time (not `import type`).
 */
export function srcImportGraph(options: { runtimeOnly?: boolean } = {}): Map<string, string[]> {
  const specifiersOf = options.runtimeOnly === true ? runtimeImportSpecifiers : importSpecifiers;
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(join(SRC, file), "utf8");
    graph.set(
      file,
      specifiersOf(text).map((specifier) =>
        posix.normalize(posix.join(posix.dirname(file), specifier.replace(/\.js$/, ".ts"))),
      ),
    );
  }
  return graph;
}

/**
 * The local import graph of scripts/ (the Ponder peer app, its own package, left out): each file as
 * `scripts/...` with the files it imports, those in src/ relative to src/ as `srcImportGraph` names
 * them (`store/openStore.ts`), the others as `scripts/...`.
 */
export function scriptsImportGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SCRIPTS, true).filter(
    (file) => !file.startsWith("bench/peers/"),
  )) {
    const text = readFileSync(join(SCRIPTS, file), "utf8");
    graph.set(
      `scripts/${file}`,
      importSpecifiers(text).map((specifier) => {
        const target = posix.normalize(
          posix.join("scripts", posix.dirname(file), specifier.replace(/\.js$/, ".ts")),
        );
        return target.startsWith("src/") ? target.slice("src/".length) : target;
      }),
    );
  }
  return graph;
}
