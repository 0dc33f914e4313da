import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker, type ResourceLimits } from "node:worker_threads";

/**
 * Starts one of the store's threads (`entry`: the file's base name in src/store, without extension).
 * The thread runs the compiled .js next to this file. From TypeScript sources (tests under tsx or
 * vitest) it first registers tsx's loader in the new thread, then imports the .ts entry.
 */
export function startStoreThread(entry: string, workerData: unknown, resourceLimits: ResourceLimits): Worker {
  const options = { workerData, resourceLimits };
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL(`./${entry}.js`, import.meta.url), options);
  const tsx = pathToFileURL(tsxEsmApiPath()).href;
  const source = new URL(`./${entry}.ts`, import.meta.url).href;
  const bootstrap = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(source)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}

/** tsx's ESM register API (its `import` export of `tsx/esm/api`: the CommonJS one registers the wrong loader). */
function tsxEsmApiPath(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve("tsx/package.json");
  const manifest = require(manifestPath) as { exports: Record<string, { import: { default: string } }> };
  return join(dirname(manifestPath), manifest.exports["./esm/api"]!.import.default);
}
