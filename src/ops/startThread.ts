import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker, type ResourceLimits } from "node:worker_threads";

/**
 * Starts a thread running `entry` (a file's base name, without extension, beside the module whose
 * `import.meta.url` is `beside`): the compiled .js. From TypeScript sources (tests under tsx or
 * vitest) it first registers tsx's loader in the new thread, then imports the .ts entry.
 */
export function startThread(
  beside: string,
  entry: string,
  workerData: unknown,
  resourceLimits: ResourceLimits,
): Worker {
  const options = { workerData, resourceLimits };
  if (!beside.endsWith(".ts")) return new Worker(new URL(`./${entry}.js`, beside), options);
  const tsx = pathToFileURL(tsxEsmApiPath()).href;
  const source = new URL(`./${entry}.ts`, beside).href;
  const bootstrap = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(source)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}

/** tsx's ESM register API (its `import` export of `tsx/esm/api`: the CommonJS one registers the wrong loader). */
function tsxEsmApiPath(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve("tsx/package.json");
  const manifest = require(manifestPath) as {
    exports: Record<string, { import: { default: string } }>;
  };
  return join(dirname(manifestPath), manifest.exports["./esm/api"]!.import.default);
}
