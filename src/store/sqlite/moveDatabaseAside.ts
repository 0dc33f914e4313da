import { existsSync, renameSync } from "node:fs";

/** SQLite's companions of a WAL database; they must keep the database's name to be found again. */
const COMPANIONS = ["-wal", "-shm"] as const;

/** A suffix that sorts by time and is safe in file names: `.20260101T120000Z.bak`. */
export function backupSuffix(now: Date): string {
  return `.${now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")}.bak`;
}

/**
 * Renames a database and its -wal/-shm to `<path><suffix>` (companions keep their dash suffix, so
 * SQLite opens the moved copy with its last commits). Returns the new path; nothing is deleted.
 * The caller must hold the writer lock.
 */
export function moveDatabaseAside(path: string, suffix: string): string {
  const target = `${path}${suffix}`;
  renameSync(path, target);
  for (const companion of COMPANIONS) {
    if (existsSync(`${path}${companion}`))
      renameSync(`${path}${companion}`, `${target}${companion}`);
  }
  return target;
}
