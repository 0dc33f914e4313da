import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { quietly, waitFor } from "../helpers/fixtures.js";

const DEVNET_TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

type Snapshot = {
  genesis: string | undefined;
  checkpoint: number;
  logs: Map<string, string>;
  hashesPerBlock: number;
};

/** What the database holds: its genesis pin, the end of its synced range, live logs by identity → status. */
function snapshot(dbPath: string): Snapshot {
  const db = new DatabaseConstructor(dbPath, { readonly: true });
  try {
    const genesis = (
      db.prepare("SELECT value FROM meta WHERE key = 'genesis_hash'").get() as
        { value: string } | undefined
    )?.value;
    const checkpoint = (
      db.prepare("SELECT COALESCE(MAX(to_block), -1) AS n FROM synced_ranges").get() as {
        n: number;
      }
    ).n;
    const rows = db
      .prepare(
        "SELECT block_hash, log_index, tx_hash, status FROM logs WHERE status IN ('confirmed', 'finalized')",
      )
      .all() as Array<Record<string, string>>;
    const hashesPerBlock = (
      db
        .prepare(
          "SELECT COALESCE(MAX(n), 0) AS n FROM (SELECT COUNT(DISTINCT block_hash) AS n FROM logs WHERE status IN ('confirmed', 'finalized') GROUP BY block_number)",
        )
        .get() as { n: number }
    ).n;
    return {
      genesis,
      checkpoint,
      logs: new Map(rows.map((r) => [`${r.block_hash}|${r.log_index}|${r.tx_hash}`, r.status!])),
      hashesPerBlock,
    };
  } finally {
    db.close();
  }
}

/** Runs `start` until the database (with genesis `genesis`, when given) indexed past `block` with some logs, then stops it with `signal`. */
async function runUntil(
  configPath: string,
  dbPath: string,
  block: number,
  signal: NodeJS.Signals,
  notGenesis?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(["start", "--config", configPath]);
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    await waitFor(
      quietly(() => {
        const s = snapshot(dbPath);
        return (
          s.checkpoint > block &&
          s.logs.size > 0 &&
          (notGenesis === undefined || (s.genesis !== undefined && s.genesis !== notGenesis))
        );
      }),
      40_000,
      `indexing past block ${block}\n${child.output().stderr}`,
      100,
    );
  } finally {
    child.kill(signal);
  }
  return { code: await exited, ...child.output() };
}

describe("the bundled devnet keeps its chain beside the database", () => {
  test("a restart resumes on the same chain (SIGTERM and kill -9); a chain that cannot be restored moves the old database aside", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flashindex-devnet-restart-"));
    const dbPath = join(dir, "devnet.db");
    const configPath = writeConfig(dir, {
      chainId: 8453,
      devnet: {
        blockTimeMs: 300,
        flashblockIntervalMs: 100,
        paymentsPerSecond: 5,
        reorgEverySeconds: 0,
        dropEverySeconds: 0,
        port: 0,
      },
      tokens: [{ address: DEVNET_TOKEN, startBlock: 0 }],
      finality: { depth: 3 },
      database: { path: dbPath },
      metrics: { enabled: false },
      logLevel: "info",
    });

    const first = await runUntil(configPath, dbPath, 5, "SIGTERM");
    expect(first.code, first.stderr).toBe(0);
    expect(existsSync(join(dir, "devnet.anvil-state.json"))).toBe(true);
    const before = snapshot(dbPath);
    expect(before.genesis).toMatch(/^0x[0-9a-f]{64}$/);

    // SIGTERM, restart: same genesis, every row kept, no block with two hashes, indexing continues.
    const second = await runUntil(configPath, dbPath, before.checkpoint + 3, "SIGTERM");
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('"msg":"Restored the devnet chain"');
    const after = snapshot(dbPath);
    expect(after.genesis).toBe(before.genesis);
    for (const key of before.logs.keys()) expect(after.logs.has(key), key).toBe(true);
    expect(after.hashesPerBlock).toBe(1);

    // kill -9: anvil dumps its chain when the daemon dies, so the next start resumes too.
    await runUntil(configPath, dbPath, after.checkpoint + 3, "SIGKILL");
    const killed = snapshot(dbPath);
    const third = await runUntil(configPath, dbPath, killed.checkpoint + 3, "SIGTERM");
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toContain('"msg":"Restored the devnet chain"');
    const resumed = snapshot(dbPath);
    expect(resumed.genesis).toBe(before.genesis);
    for (const key of killed.logs.keys()) expect(resumed.logs.has(key), key).toBe(true);
    expect(resumed.hashesPerBlock).toBe(1);
    expect(readdirSync(dir).filter((f) => f.includes(".bak"))).toEqual([]);

    // Without the saved chain, the old database is moved aside (with a log line saying where) and a new chain starts.
    rmSync(join(dir, "devnet.anvil-state.json"));
    const fresh = await runUntil(configPath, dbPath, 2, "SIGTERM", before.genesis);
    expect(fresh.code, fresh.stderr).toBe(0);
    const moved =
      /"msg":"Moved the old database aside and started a fresh devnet chain".*?"moved_to":"([^"]+)"/.exec(
        fresh.stdout,
      )?.[1];
    expect(moved).toMatch(new RegExp(`^${dbPath.replace(/[.]/g, "\\.")}\\.\\d{8}T\\d{6}Z\\.bak$`));
    expect(snapshot(moved!).genesis).toBe(before.genesis);
    expect(snapshot(moved!).logs.size).toBe(resumed.logs.size);
    expect(snapshot(dbPath).genesis).not.toBe(before.genesis);
  }, 180_000);
});
