#!/usr/bin/env node
// Compiles src/ and scripts/ into dist/ with tsc, only when a source is newer than the last build,
// and says so on stderr: `npm start` must not sit silent for the 20 s a build takes, nor build
// when nothing changed. Also the `prepare` script, so `npm ci` leaves a built project behind.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const STAMP = join(ROOT, "dist", ".build-stamp");
/** What the build reads besides the sources: a change to any of these rebuilds too. */
const CONFIG_FILES = ["tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json"];
const SOURCE_DIRECTORIES = ["src", "scripts"];

/** Newest modification time (ms) of the files under `path`, 0 when there are none. */
function newestMtimeMs(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path))
    newest = Math.max(newest, newestMtimeMs(join(path, entry)));
  return newest;
}

function say(line) {
  process.stderr.write(`flashindex: ${line}\n`);
}

// The Docker build installs dependencies before it copies the sources, and a production install
// has no TypeScript: neither has anything to build yet.
if (!existsSync(join(ROOT, "src"))) {
  say("no src/ to build yet (dependencies installed first); skipped the build");
  process.exit(0);
}
let tsc;
try {
  tsc = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc");
} catch {
  say("TypeScript is not installed (a production install?); skipped the build");
  process.exit(0);
}

/** The bin runs through its shebang (which sets its Node flags and allocator): it must be executable. */
const BIN = join(ROOT, "dist", "src", "cli", "main.js");
const makeBinExecutable = () => existsSync(BIN) && chmodSync(BIN, 0o755);

const sources = Math.max(
  ...SOURCE_DIRECTORIES.map((d) => newestMtimeMs(join(ROOT, d))),
  ...CONFIG_FILES.map((f) => newestMtimeMs(join(ROOT, f))),
);
const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
if (built >= sources) {
  makeBinExecutable();
  process.exit(0);
}

say(
  built === 0
    ? "building dist/ from the TypeScript sources (tsc, about 20 s)..."
    : "sources changed since the last build; rebuilding dist/ (tsc, about 20 s)...",
);
const started = Date.now();
const result = spawnSync(process.execPath, [tsc, "-p", join(ROOT, "tsconfig.build.json")], {
  cwd: ROOT,
  stdio: "inherit",
});
if (result.status !== 0) {
  say("the TypeScript build failed (see above)");
  process.exit(result.status ?? 1);
}
makeBinExecutable();
mkdirSync(dirname(STAMP), { recursive: true });
// The stamp's mtime is when the build started: a source saved during the build is newer, so it rebuilds next time.
writeFileSync(STAMP, `${new Date(started).toISOString()}\n`);
utimesSync(STAMP, started / 1_000, started / 1_000);
say(`built dist/ in ${((Date.now() - started) / 1_000).toFixed(1)} s`);
