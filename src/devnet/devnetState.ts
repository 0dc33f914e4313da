import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { getAddress, type Address } from "viem";

/** How often anvil dumps its chain state to disk, in seconds; it also dumps on SIGTERM. */
export const DEVNET_STATE_INTERVAL_S = 10;

/** What a restart needs besides anvil's own state: how the chain was born and where its token is. */
export type DevnetInfo = {
  chainId: number;
  /** Unix seconds. Note: anvil 1.7.1 makes a new genesis block on every start, even when it loads a
   * state; only with the same `--timestamp` does that block (and its hash) come out identical. */
  genesisTimestamp: number;
  token: Address;
  tokenDeployBlock: number;
};

export type DevnetStatePaths = { anvilState: string; info: string };

/** The devnet's files beside its database: `data/devnet.db` → `data/devnet.anvil-state.json`, `data/devnet.devnet.json`. */
export function devnetStatePaths(databasePath: string): DevnetStatePaths {
  const stem = join(dirname(databasePath), basename(databasePath, extname(databasePath)));
  return { anvilState: `${stem}.anvil-state.json`, info: `${stem}.devnet.json` };
}

/** The recorded devnet info; undefined when absent or unreadable (then the chain cannot be restored). */
export function readDevnetInfo(path: string): DevnetInfo | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const value = JSON.parse(readFileSync(path, "utf8")) as Partial<DevnetInfo>;
    const whole = (n: unknown): n is number =>
      typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
    if (
      !whole(value.chainId) ||
      !whole(value.genesisTimestamp) ||
      !whole(value.tokenDeployBlock) ||
      typeof value.token !== "string"
    )
      return undefined;
    return {
      chainId: value.chainId,
      genesisTimestamp: value.genesisTimestamp,
      token: getAddress(value.token),
      tokenDeployBlock: value.tokenDeployBlock,
    };
  } catch {
    return undefined;
  }
}

export function writeDevnetInfo(path: string, info: DevnetInfo): void {
  writeFileSync(path, `${JSON.stringify(info, null, 2)}\n`);
}

/** Moves the devnet's files aside with the given suffix; returns the new paths of those that existed. */
export function moveDevnetStateAside(paths: DevnetStatePaths, suffix: string): string[] {
  const moved: string[] = [];
  for (const path of [paths.anvilState, paths.info]) {
    if (!existsSync(path)) continue;
    renameSync(path, `${path}${suffix}`);
    moved.push(`${path}${suffix}`);
  }
  return moved;
}
