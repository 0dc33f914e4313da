import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { CRASH_AT_ENV } from "../../src/ops/crashPoint.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

/*
 * kill -9 mid-settle on a relayer pool (issue 43), as settleCrashPoints.test.ts does for one key:
 * a daemon with two relayers takes several settles at once and dies at the first "sent" step; a
 * second daemon on the same database finishes what was broadcast and sends nothing twice.
 */

const SETTLES = 6;
/** Longest wait for a /settle answer or a daemon's exit: a case fails with a reason, never at the test's timeout. */
const STEP_TIMEOUT_MS = 30_000;
let devnet: Devnet;
let client: PublicClient;
let dir: string;
let dbPath: string;
let configPath: string;
let offer: ExactOffer;
let relayers: Address[];
let firstBlock: bigint;
const daemons: Array<ReturnType<typeof spawnCli>> = [];

function startDaemon(
  env: NodeJS.ProcessEnv = {},
): Promise<{ daemon: ReturnType<typeof spawnCli>; url: string }> {
  const daemon = spawnCli(["start", "--config", configPath], {
    POOL_RELAYER_1: devnet.privateKeys[6]!,
    POOL_RELAYER_2: devnet.privateKeys[7]!,
    ...env,
  });
  daemons.push(daemon);
  return waitFor(
    () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon.output().stdout)?.[1],
    60_000,
    `the facilitator\n${daemon.output().stderr}`,
    50,
  ).then((url) => ({ daemon, url }));
}

function exitOf(daemon: ReturnType<typeof spawnCli>, ms: number): Promise<void> {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `the daemon still runs after ${ms} ms\n${daemon.output().stderr.slice(-2_000)}`,
          ),
        ),
      ms,
    );
    daemon.once("exit", () => (clearTimeout(timer), resolve()));
  });
}

async function settle(url: string, body: unknown): Promise<Record<string, unknown> | "no answer"> {
  const signal = AbortSignal.timeout(STEP_TIMEOUT_MS);
  return fetch(`${url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  }).then(
    async (response) => (await response.json()) as Record<string, unknown>,
    () => "no answer" as const,
  );
}

function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new DatabaseConstructor(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** Transactions from any relayer of the pool to the token whose calldata carries `nonce`, in every block so far. */
async function relayedCarrying(nonce: Hex): Promise<Hex[]> {
  const head = await client.getBlockNumber();
  const found: Hex[] = [];
  const from = new Set(relayers.map((r) => r.toLowerCase()));
  for (let number = firstBlock; number <= head; number++) {
    const block = await client.getBlock({ blockNumber: number, includeTransactions: true });
    for (const tx of block.transactions)
      if (
        from.has(tx.from.toLowerCase()) &&
        tx.to?.toLowerCase() === devnet.token.toLowerCase() &&
        tx.input.includes(nonce.slice(2).toLowerCase())
      )
        found.push(tx.hash);
  }
  return found;
}

const used = (from: Address, nonce: Hex) =>
  client.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "authorizationState",
    args: [from, nonce],
  });
const payer = () => privateKeyToAccount(devnet.privateKeys[1]!);

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl), cacheTime: 0 });
  relayers = [6, 7].map((i) => privateKeyToAccount(devnet.privateKeys[i]!).address);
  firstBlock = await client.getBlockNumber();
  const domain = await readTokenDomain(client, devnet.token);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
    amount: 3_000n,
  };
  dir = mkdtempSync(join(tmpdir(), "flashindex-pool-crash-"));
  dbPath = join(dir, "index.db");
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: dbPath },
    metrics: { enabled: false },
    facilitator: {
      enabled: true,
      port: 0,
      settleWaitsFor: "preconfirmed",
      relayers: [{ keyEnv: "POOL_RELAYER_1" }, { keyEnv: "POOL_RELAYER_2" }],
    },
  });
}, 60_000);

afterAll(async () => {
  for (const daemon of daemons.splice(0))
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill("SIGKILL");
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("a relayer pool killed with SIGKILL mid-settle", () => {
  test("settles in flight on two relayers, killed at the first send: after a restart each authorization is carried by at most one transaction, and the pool settles on", async () => {
    const bodies = await Promise.all(
      Array.from({ length: SETTLES }, () => referencePaymentBody(payer(), offer)),
    );
    const nonces = bodies.map(
      (b) => (b.paymentPayload.payload.authorization as { nonce: Hex }).nonce,
    );

    const first = await startDaemon({ [CRASH_AT_ENV]: "sent" });
    const exited = exitOf(first.daemon, STEP_TIMEOUT_MS);
    const answers = await Promise.all(bodies.map((body) => settle(first.url, body)));
    await exited;
    expect(first.daemon.signalCode).toBe("SIGKILL");
    expect(first.daemon.output().stderr).toContain("test crash point sent");
    expect(answers.filter((a) => a !== "no answer")).toEqual([]);

    const second = await startDaemon();
    try {
      // Every order of the killed settles comes to rest: captured if broadcast, authorized if not.
      const resting = () => {
        const states = nonces.map(
          (n) =>
            query<{ state: string }>("SELECT state FROM orders WHERE nonce = ?", n.toLowerCase())[0]
              ?.state,
        );
        return states.every((s) => s === undefined || s === "captured" || s === "authorized")
          ? states
          : undefined;
      };
      const states = await waitFor(resting, 30_000, "the killed settles at rest", 100);
      expect(states.filter((s) => s === "captured").length).toBeGreaterThan(0);

      // The chain: each authorization used once or never, by at most one transaction of the pool.
      for (const [i, nonce] of nonces.entries()) {
        const carrying = await relayedCarrying(nonce);
        expect(carrying.length, `payment ${i}`).toBeLessThanOrEqual(1);
        expect(await used(payer().address, nonce), `payment ${i}`).toBe(carrying.length === 1);
        expect(states[i] === "captured", `payment ${i}`).toBe(carrying.length === 1);
      }

      // The pool settles on, on both relayers' next nonces: no gap, no gap filler.
      const next = await Promise.all(
        Array.from({ length: 4 }, async () =>
          settle(second.url, await referencePaymentBody(payer(), offer)),
        ),
      );
      expect(
        next.filter((a) => a === "no answer" || a.success !== true),
        JSON.stringify(next),
      ).toEqual([]);
      for (const relayer of relayers) {
        const count = await waitFor(
          async () => {
            const [latest, pending] = await Promise.all([
              client.getTransactionCount({ address: relayer, blockTag: "latest" }),
              client.getTransactionCount({ address: relayer, blockTag: "pending" }),
            ]);
            return latest === pending ? latest : undefined;
          },
          30_000,
          `${relayer}'s transactions sealed`,
          100,
        );
        const book = query<{ nonce: number; state: string }>(
          "SELECT nonce, state FROM relayer_nonces WHERE relayer = ? ORDER BY nonce",
          relayer.toLowerCase(),
        );
        expect(
          book.filter((e) => e.nonce < count && !["broadcast", "landed"].includes(e.state)),
          relayer,
        ).toEqual([]);
        expect(
          book.filter((e) => e.nonce >= count && e.state !== "released"),
          relayer,
        ).toEqual([]);
      }
      expect(second.daemon.output().stdout).not.toContain("Filled relayer nonce gap");
    } finally {
      second.daemon.kill("SIGTERM");
      await exitOf(second.daemon, STEP_TIMEOUT_MS).catch(() => second.daemon.kill("SIGKILL"));
    }
  }, 240_000);
});
