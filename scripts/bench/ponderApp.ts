import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The app template, in the sources (dist/ holds no copy of it). */
const TEMPLATE_DIR = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "scripts",
  "bench",
  "peers",
  "ponder",
);
/** Where the app is installed and run: under .bench/, never in flashindex's own node_modules. */
export const PONDER_APP_DIR = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  ".bench",
  "peers",
  "ponder",
);

/** The Ponder version the template pins (its package.json), e.g. "0.16.10". */
export function ponderPinnedVersion(): string {
  const manifest = JSON.parse(readFileSync(join(TEMPLATE_DIR, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  const version = manifest.dependencies.ponder;
  if (version === undefined)
    throw new Error(`${TEMPLATE_DIR}/package.json names no ponder version`);
  return version;
}

/** The Ponder version installed in the app, or undefined when none is. */
function installedPonderVersion(): string | undefined {
  const manifest = join(PONDER_APP_DIR, "node_modules", "ponder", "package.json");
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
}

/**
 * Copies the Ponder app template into .bench/peers/ponder/ (every run, so an edit to the template
 * takes effect) and installs its packages there with npm when the pinned Ponder is not installed
 * yet. Returns the app's directory and the installed Ponder version. Throws with npm's own output
 * when the install fails: the bench reports that as the reason Ponder's rows are missing.
 */
export function preparePonderApp(): { dir: string; version: string } {
  mkdirSync(PONDER_APP_DIR, { recursive: true });
  cpSync(TEMPLATE_DIR, PONDER_APP_DIR, { recursive: true });
  const pinned = ponderPinnedVersion();
  if (installedPonderVersion() !== pinned) {
    process.stderr.write(`installing Ponder ${pinned} into ${PONDER_APP_DIR} (once)\n`);
    const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: PONDER_APP_DIR,
      encoding: "utf8",
      timeout: 15 * 60_000,
    });
    if (npm.status !== 0) {
      const output = `${npm.stdout ?? ""}${npm.stderr ?? ""}`.trim().slice(-2_000);
      throw new Error(
        `npm install of Ponder ${pinned} in ${PONDER_APP_DIR} failed (${npm.error?.message ?? `exit ${npm.status}`}): ${output}`,
      );
    }
  }
  const version = installedPonderVersion();
  if (version !== pinned)
    throw new Error(
      `${PONDER_APP_DIR}: npm installed Ponder ${version ?? "nothing"}, not ${pinned}`,
    );
  return { dir: PONDER_APP_DIR, version };
}
