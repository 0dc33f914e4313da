import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { startAnvil } from "../../src/devnet/anvil.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { writeConfig } from "../helpers/cli.js";
import { quietly, waitFor } from "../helpers/fixtures.js";
import {
  cameTrue,
  commandLine,
  descendants,
  DEVNET_TOKEN,
  isAlive,
  killLeftovers,
  spawnNpmStart,
  type NpmStart,
} from "../helpers/npmStart.js";

/**
 * Seconds of demo traffic before the forced exit. The scenario ran minutes; what it takes is
 * a chain saved by anvil's 10 s timer more than once, behind the database in between: half a minute
 * does that. FLASHINDEX_TEST_TRAFFIC_SECONDS=180 runs the three minutes.
 */
const TRAFFIC_SECONDS = Number(process.env.FLASHINDEX_TEST_TRAFFIC_SECONDS ?? 30);

type Indexed = { checkpoint: number; live: Set<string>; removed: number };

/** What the database holds: the end of its synced range and its live logs (block hash | log index | tx hash). */
function indexed(dbPath: string): Indexed {
  const db = new DatabaseConstructor(dbPath, { readonly: true });
  try {
    const checkpoint = (
      db.prepare("SELECT COALESCE(MAX(to_block), -1) AS n FROM synced_ranges").get() as {
        n: number;
      }
    ).n;
    const rows = db
      .prepare(
        "SELECT block_hash, log_index, tx_hash FROM logs WHERE status IN ('confirmed', 'finalized') AND block_number <= ?",
      )
      .all(checkpoint) as Array<Record<string, string>>;
    const removed = (
      db.prepare("SELECT COUNT(*) AS n FROM logs WHERE status = 'removed'").get() as { n: number }
    ).n;
    return {
      checkpoint,
      live: new Set(rows.map((r) => `${r.block_hash}|${r.log_index}|${r.tx_hash}`.toLowerCase())),
      removed,
    };
  } finally {
    db.close();
  }
}

/** The payment logs of the chain saved in `dir`, blocks 0..`to`, read from an anvil that loads the saved chain (and saves nothing). */
async function savedChainLogs(dir: string, to: number): Promise<Set<string>> {
  const info = JSON.parse(readFileSync(join(dir, "devnet.devnet.json"), "utf8")) as {
    genesisTimestamp: number;
  };
  const anvil = await startAnvil({
    chainId: 8453,
    extraArgs: [
      "--load-state",
      join(dir, "devnet.anvil-state.json"),
      "--timestamp",
      String(info.genesisTimestamp),
    ],
  });
  try {
    const response = await fetch(anvil.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getLogs",
        params: [
          {
            address: DEVNET_TOKEN,
            topics: [[...PAYMENT_TOPICS]],
            fromBlock: "0x0",
            toBlock: `0x${to.toString(16)}`,
          },
        ],
      }),
    });
    const { result } = (await response.json()) as {
      result: Array<{ blockHash: string; logIndex: string; transactionHash: string }>;
    };
    return new Set(
      result.map((l) => `${l.blockHash}|${Number(l.logIndex)}|${l.transactionHash}`.toLowerCase()),
    );
  } finally {
    await anvil.stop();
  }
}

/** Runs `npm start` until the database indexed past `block`, then stops it gracefully with Ctrl-C. */
async function runUntilIndexed(configPath: string, dbPath: string, block: number): Promise<string> {
  const npm = spawnNpmStart(configPath);
  try {
    // After a rewind the devnet makes again the blocks above its restored head: up to half the traffic's time.
    await waitFor(
      quietly(() => indexed(dbPath).checkpoint > block),
      90_000 + TRAFFIC_SECONDS * 1_000,
      `indexing past block ${block}\n${npm.output()}`,
      200,
    );
    process.kill(-npm.pid!, "SIGINT");
    expect([0, 130], npm.output()).toContain(await npm.exited);
    expect(npm.output()).toContain('"msg":"Stopped flashindex"');
    return npm.output();
  } finally {
    killLeftovers([...descendants(npm.pid!), npm.pid!]);
  }
}

/** A copy of the chain anvil saved last, once it parses (anvil may be writing it). */
async function copySavedChain(dir: string, to: string): Promise<void> {
  await waitFor(
    quietly(() => {
      copyFileSync(join(dir, "devnet.anvil-state.json"), to);
      JSON.parse(readFileSync(to, "utf8"));
      return true;
    }),
    20_000,
    "a whole saved chain",
    100,
  );
}

/**
 * A forced exit as an operator makes one: a stop that hangs (here anvil is stopped by SIGSTOP, so the
 * devnet cannot close), and the same signal sent again after the repeat window. Anvil is let go
 * right after, as a busy process would finish what held it.
 */
async function forceExit(npm: NpmStart): Promise<number> {
  const anvil = descendants(npm.pid!).find(
    (pid) => commandLine(pid).includes("anvil") && !commandLine(pid).startsWith("sh"),
  );
  expect(anvil, descendants(npm.pid!).map(commandLine).join("\n")).toBeDefined();
  process.kill(anvil!, "SIGSTOP");
  process.kill(-npm.pid!, "SIGTERM");
  await waitFor(
    () => npm.output().includes('"msg":"Received a signal, shutting down'),
    10_000,
    "the first signal's log line",
    20,
  );
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  process.kill(-npm.pid!, "SIGTERM");
  process.kill(anvil!, "SIGCONT");
  await npm.exited;
  expect(await cameTrue(() => !isAlive(anvil!), 10_000)).toBe(true);
  return anvil!;
}

describe("a forced exit keeps the devnet's data", () => {
  test(
    `after ${TRAFFIC_SECONDS} s of devnet traffic a forced exit saves the chain, npm start continues the same database, and a chain saved behind it is rewound as a reorg`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "flashindex-forced-exit-"));
      const dbPath = join(dir, "devnet.db");
      const configPath = writeConfig(dir, {
        chainId: 8453,
        devnet: {
          blockTimeMs: 500,
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
      const earlyChain = join(dir, "early.anvil-state.json");

      // Traffic, a copy of the chain saved halfway, then a forced exit.
      const first = spawnNpmStart(configPath);
      try {
        await waitFor(
          () => first.output().includes('"msg":"Caught up with the head"'),
          120_000,
          `the first start\n${first.output()}`,
          200,
        );
        await new Promise((resolve) => setTimeout(resolve, (TRAFFIC_SECONDS * 1_000) / 2));
        await copySavedChain(dir, earlyChain);
        await new Promise((resolve) => setTimeout(resolve, (TRAFFIC_SECONDS * 1_000) / 2));
        await forceExit(first);
      } finally {
        killLeftovers([...descendants(first.pid!), first.pid!]);
      }
      expect(first.output()).toContain('"msg":"Received a second signal, exited at once"');
      const forced = indexed(dbPath);
      expect(forced.live.size).toBeGreaterThan(TRAFFIC_SECONDS);

      // The chain was saved on the way out: the next start restores it whole and continues the database.
      const second = await runUntilIndexed(configPath, dbPath, forced.checkpoint + 3);
      expect(second).toContain('"msg":"Restored the devnet chain"');
      expect(second).not.toContain("Moved the old database aside");
      expect(second).not.toContain("Flagged removed the rows above the chain's end");
      const continued = indexed(dbPath);
      for (const key of forced.live) expect(continued.live.has(key), key).toBe(true);
      expect(continued.live).toEqual(await savedChainLogs(dir, continued.checkpoint));

      // A chain saved before the database's last blocks (a crash between two of anvil's saves): same
      // genesis, so the database is continued, its blocks above the saved head rewound as a reorg.
      copyFileSync(earlyChain, join(dir, "devnet.anvil-state.json"));
      const third = await runUntilIndexed(configPath, dbPath, continued.checkpoint + 3);
      const restoredHead = Number(
        /"msg":"Restored the devnet chain".*?"head_block":(\d+)/.exec(third)?.[1],
      );
      expect(restoredHead).toBeLessThan(continued.checkpoint);
      expect(third).toMatch(
        new RegExp(
          `"msg":"Flagged removed the rows above the chain's end".*"chain_head":${restoredHead}`,
        ),
      );
      expect(third).not.toContain("Moved the old database aside");
      const rewound = indexed(dbPath);
      expect(rewound.removed).toBeGreaterThan(continued.removed);
      expect(rewound.live).toEqual(await savedChainLogs(dir, rewound.checkpoint));
      expect(readdirSync(dir).filter((f) => f.includes(".bak"))).toEqual([]);
    },
    300_000 + TRAFFIC_SECONDS * 3_000,
  );
});
