import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";

/**
 * Where a running daemon's facilitator answers, recorded beside its SQLite database
 * (`data/devnet.db` → `data/devnet.facilitator.json`) for `flashindex status`. Only fs here:
 * status must not load viem (test/cli/startupImports.test.ts).
 */
export type FacilitatorRecord = {
  pid: number;
  url: string;
  relayer: string;
  settleWaitsFor: string;
};

export function facilitatorRecordPath(databasePath: string): string {
  return `${databasePath.replace(/\.[^./]*$/, "")}.facilitator.json`;
}

export function writeFacilitatorRecord(path: string, record: FacilitatorRecord): void {
  writeFileSync(
    path,
    `${JSON.stringify({ pid: record.pid, url: record.url, relayer: record.relayer, settle_waits_for: record.settleWaitsFor }, null, 2)}\n`,
  );
}

/** Removes the record, but only the one this process wrote. */
export function removeFacilitatorRecord(path: string, pid: number): void {
  if (readRecord(path)?.pid === pid) rmSync(path, { force: true });
}

/** The facilitator recorded at `path` while its daemon still runs; undefined otherwise. */
export function readRunningFacilitator(path: string): FacilitatorRecord | undefined {
  const record = readRecord(path);
  if (record === undefined) return undefined;
  try {
    process.kill(record.pid, 0);
    return record;
  } catch (error) {
    // EPERM: alive, another user's.
    return (error as NodeJS.ErrnoException).code === "EPERM" ? record : undefined;
  }
}

function readRecord(path: string): FacilitatorRecord | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    const { pid, url, relayer, settle_waits_for: settleWaitsFor } = value;
    if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
    if (
      typeof url !== "string" ||
      !/^https?:\/\//.test(url) ||
      typeof relayer !== "string" ||
      typeof settleWaitsFor !== "string"
    )
      return undefined;
    return { pid, url, relayer, settleWaitsFor };
  } catch {
    return undefined;
  }
}
