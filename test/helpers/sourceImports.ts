import { readdirSync, readFileSync } from "node:fs";
import { join, posix, resolve } from "node:path";

/** The repository's src/ folder. */
export const SRC = resolve(import.meta.dirname, "../../src");

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

/** Every .ts file under `dir`, as paths relative to it with forward slashes. */
export function sourceFiles(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((file) => file.endsWith(".ts"))
    .map((file) => file.split("\\").join("/"))
    .sort();
}

/**
 * The local import graph of src/: each file (relative to src/, e.g. `store/openStore.ts`) with the
 * files it imports, resolved the way NodeNext resolves them (`./x.js` names `./x.ts`).
 */
export function srcImportGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(join(SRC, file), "utf8");
    graph.set(
      file,
      importSpecifiers(text).map((specifier) => posix.normalize(posix.join(posix.dirname(file), specifier.replace(/\.js$/, ".ts")))),
    );
  }
  return graph;
}
