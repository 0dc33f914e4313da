import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { ConfigError } from "../../errors/base.js";

/** What the user can do about any of these, appended to each message. */
const FIX = "use another database.path (or --db)";

/** Node's file-system error codes a user fixes by choosing another path or changing permissions. */
const FS_REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "a part of the path is a file, not a directory",
  EROFS: "read-only file system",
  ENOENT: "no such directory",
  ENOSPC: "no space left on the device",
};

/**
 * Creates the database's directory (recursively) or throws a ConfigError (exit 2) naming the
 * directory, the database path and why: never a stack trace for a path the user typed.
 */
export function ensureDatabaseDirectory(databasePath: string): void {
  const directory = dirname(databasePath);
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const reason = typeof code === "string" ? (FS_REASONS[code] ?? code) : String(error);
    throw new ConfigError(
      "database.path",
      `cannot create the directory ${directory} for ${databasePath} (${reason}); create it or ${FIX}`,
    );
  }
}

/**
 * SQLite's refusals of a path (not a database, cannot open, read-only, no permission, disk I/O) are
 * the user's to fix: one line naming the file, exit 2. Anything else is returned unchanged.
 */
export function asDatabasePathError(error: unknown, path: string): unknown {
  if (error instanceof ConfigError) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") return error;
  const message = (error as Error).message;
  if (code === "SQLITE_NOTADB")
    return new ConfigError(
      "database.path",
      `${path} is not a SQLite database; refusing to touch it: ${FIX}`,
    );
  if (code === "SQLITE_CANTOPEN")
    return new ConfigError(
      "database.path",
      `${path} cannot be opened (${message}): check that ${dirname(path)} exists and is writable, or ${FIX}`,
    );
  if (code.startsWith("SQLITE_READONLY") || code === "SQLITE_PERM" || code === "SQLITE_AUTH")
    return new ConfigError(
      "database.path",
      `${path} is not writable (${message}): flashindex needs to write the file and its directory ${dirname(path)} (for -wal/-shm), or ${FIX}`,
    );
  if (code.startsWith("SQLITE_IOERR") || code === "SQLITE_FULL" || code === "SQLITE_CORRUPT")
    return new ConfigError("database.path", `${path} cannot be used (${message}); ${FIX}`);
  if (code in FS_REASONS)
    return new ConfigError("database.path", `${path}: ${FS_REASONS[code]}; ${FIX}`);
  return error;
}
