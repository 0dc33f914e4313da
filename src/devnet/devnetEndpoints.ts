import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import type { DevnetEndpoints } from "../config/types.js";

/**
 * Where the daemon's devnet answers, recorded beside the database while it runs
 * (`data/devnet.db` → `data/devnet.endpoints.json`), so every other command with the same config
 * finds it. Written once the devnet is up, removed when it stops; a file left by a killed daemon
 * names a process that no longer exists and is ignored. Only fs and path here: commands on Base
 * import this module without loading the devnet.
 */
export type RecordedDevnet = DevnetEndpoints & {
  readonly pid: number;
  readonly token: string;
  readonly startedAt: string;
};

export function devnetEndpointsPath(databasePath: string): string {
  return `${join(dirname(databasePath), basename(databasePath, extname(databasePath)))}.endpoints.json`;
}

export function writeDevnetEndpoints(path: string, devnet: RecordedDevnet): void {
  const record = {
    pid: devnet.pid,
    http_url: devnet.httpUrl,
    ws_url: devnet.wsUrl,
    registration_url: devnet.registrationUrl,
    token: devnet.token,
    started_at: devnet.startedAt,
  };
  writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`);
}

/** Removes the record, but only the one this process wrote (a newer daemon's stays). */
export function removeDevnetEndpoints(path: string, pid: number): void {
  if (readRecord(path)?.pid === pid) rmSync(path, { force: true });
}

/** The running devnet recorded at `path`; undefined when there is none, or its daemon is gone. */
export function readRunningDevnet(path: string): RecordedDevnet | undefined {
  const record = readRecord(path);
  return record !== undefined && isAlive(record.pid) ? record : undefined;
}

function readRecord(path: string): RecordedDevnet | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    const text = (key: string) =>
      typeof value[key] === "string" ? (value[key] as string) : undefined;
    const [httpUrl, wsUrl, registrationUrl, token, startedAt] = [
      "http_url",
      "ws_url",
      "registration_url",
      "token",
      "started_at",
    ].map(text);
    const pid = value.pid;
    if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
    if (
      httpUrl === undefined ||
      wsUrl === undefined ||
      registrationUrl === undefined ||
      token === undefined ||
      startedAt === undefined
    )
      return undefined;
    if (![httpUrl, wsUrl, registrationUrl].every(isLoopbackUrl)) return undefined;
    return { pid, httpUrl, wsUrl, registrationUrl, token, startedAt };
  } catch {
    return undefined;
  }
}

/** The devnet only ever listens on the loopback interface: a record pointing elsewhere is not ours. */
function isLoopbackUrl(text: string): boolean {
  try {
    return ["127.0.0.1", "localhost", "[::1]"].includes(new URL(text).hostname);
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
