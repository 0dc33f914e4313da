import { execFileSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";

/** The machine a run measured: cores, CPU model, memory, Node version (runs.csv's `machine`). */
export function machineText(): string {
  const cpu = cpus()[0]?.model ?? "unknown cpu";
  return `${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/** The commit the run measured (with "+changes" when the work tree differs), or "unknown" outside git. */
export function currentCommit(): string {
  try {
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: import.meta.dirname,
      encoding: "utf8",
    }).trim();
    const dirty =
      execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
        cwd: import.meta.dirname,
        encoding: "utf8",
      }).trim() !== "";
    return dirty ? `${commit}+changes` : commit;
  } catch {
    return "unknown";
  }
}

/** results/runs.csv in the sources (the bench runs from dist/scripts/bench/). */
export const RUNS_CSV = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "scripts",
  "bench",
  "results",
  "runs.csv",
);
