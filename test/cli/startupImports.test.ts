import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, test } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");

/**
 * Modules a source file loads when it is imported: its static value imports and re-exports
 * (`import type` is erased, `await import()` waits until it runs). Local ones as resolved .ts paths.
 */
function staticImports(file: string): { local: string[]; packages: string[] } {
  const text = readFileSync(file, "utf8");
  const local: string[] = [];
  const packages: string[] = [];
  for (const match of text.matchAll(
    /^(?:import|export)\s+(?!type\b)(?:[^;"]*?\sfrom\s+)?"([^"]+)";/gm,
  )) {
    const specifier = match[1]!;
    if (specifier.startsWith("."))
      local.push(join(dirname(file), specifier.replace(/\.js$/, ".ts")));
    else packages.push(specifier);
  }
  return { local, packages };
}

/** Every package the module graph under `entry` loads at import, with a file that imports it. */
function packagesLoadedBy(entry: string): Map<string, string> {
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const imports = staticImports(file);
    for (const name of imports.packages)
      if (!packages.has(name)) packages.set(name, file.slice(SRC.length + 1));
    imports.local.forEach(visit);
  };
  visit(join(SRC, entry));
  return packages;
}

describe("what a command loads at start", () => {
  test("the import scan sees value imports and skips type-only ones", () => {
    const packages = packagesLoadedBy("config/fields.ts");
    expect(packages.has("ox/Address")).toBe(true);
    expect(packages.has("viem")).toBe(false);
  });

  // Importing viem's index costs about 150 ms of every start (200 ms with the other commands):
  // backfill and start use ox's modules, and viem only where a devnet or a signature needs it.
  test.each([
    "cli/main.ts",
    "cli/commands/backfillCommand.ts",
    "cli/commands/startCommand.ts",
    "daemon.ts",
    "cli/commands/statusCommand.ts",
  ])("%s does not load viem", (entry) => {
    const packages = packagesLoadedBy(entry);
    expect([...packages].filter(([name]) => name === "viem" || name.startsWith("viem/"))).toEqual(
      [],
    );
  });

  test("main imports a command's module only when that command runs", () => {
    expect(
      staticImports(join(SRC, "cli/main.ts")).local.filter((file) => file.includes("/commands/")),
    ).toEqual([]);
  });
});
