import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { createPublicClient, http, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { CRASH_AT_ENV } from "../../src/ops/crashPoint.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

/*
 * Gas accounting across a kill -9 (schema 17): a settle whose process dies right after handing its
 * transaction to the node never had its wait see the receipt. The daemon started next on the same
 * database records the capture's gas from the receipt when its driver finds the order paid,
 * whether the indexer moved the order to captured first or not.
 */

/** Longest wait for a daemon's exit or the gas: a failure says why, never the test's timeout. */
const STEP_TIMEOUT_MS = 30_000;
let devnet: Devnet;
let client: PublicClient;
let dir: string;
let dbPath: string;
let configPath: string;
let offer: ExactOffer;
const daemons: Array<ReturnType<typeof spawnCli>> = [];

function startDaemon(env: NodeJS.ProcessEnv = {}) {
  const daemon = spawnCli(["start", "--config", configPath], {
    FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
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
    const timer = setTimeout(() => reject(new Error(`the daemon still runs after ${ms} ms`)), ms);
    daemon.once("exit", () => (clearTimeout(timer), resolve()));
  });
}

function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new DatabaseConstructor(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl), cacheTime: 0 });
  const domain = await readTokenDomain(client, devnet.token);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
    amount: 3_000n,
  };
  dir = mkdtempSync(join(tmpdir(), "flashindex-crash-gas-"));
  dbPath = join(dir, "index.db");
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    // Six blocks to finality: the intent stays `sent` a little while after its event.
    finality: { depth: 6 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: dbPath },
    metrics: { enabled: false },
    facilitator: { enabled: true, port: 0, settleWaitsFor: "preconfirmed" },
  });
}, 60_000);

afterAll(async () => {
  for (const daemon of daemons.splice(0))
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill("SIGKILL");
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("gas of a capture finished after a restart", () => {
  test("killed right after the send: the next daemon records the capture's gas used and price from its receipt", async () => {
    const body = await referencePaymentBody(privateKeyToAccount(devnet.privateKeys[1]!), offer);
    const nonce = (body.paymentPayload.payload.authorization as { nonce: Hex }).nonce;

    const first = await startDaemon({ [CRASH_AT_ENV]: "sent" });
    const exited = exitOf(first.daemon, STEP_TIMEOUT_MS);
    await fetch(`${first.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
    }).catch(() => undefined);
    await exited;
    expect(first.daemon.signalCode).toBe("SIGKILL");
    expect(first.daemon.output().stderr).toContain("test crash point sent");
    type Row = {
      state: string;
      tx_hash: Hex;
      gas_used: string | null;
      effective_gas_price: string | null;
      gas_tx_hash: string | null;
    };
    const row = () =>
      query<Row>(
        `SELECT o.state, c.tx_hash, c.gas_used, c.effective_gas_price, c.gas_tx_hash
         FROM orders o JOIN order_captures c ON c.order_id = o.id WHERE o.nonce = ?`,
        nonce.toLowerCase(),
      )[0];
    // Broadcast, and the process that sent it gone before its wait saw anything.
    expect(row()).toMatchObject({ state: "capturing", gas_used: null });

    const second = await startDaemon();
    try {
      const recorded = await waitFor(
        () => {
          const r = row();
          return r?.state === "captured" && r.gas_used !== null ? r : undefined;
        },
        STEP_TIMEOUT_MS,
        `the capture's gas recorded\n${second.daemon.output().stdout.slice(-3_000)}`,
        100,
      );
      const receipt = await client.getTransactionReceipt({ hash: recorded.tx_hash });
      expect(receipt.status).toBe("success");
      expect(recorded).toMatchObject({
        gas_used: receipt.gasUsed.toString(),
        effective_gas_price: receipt.effectiveGasPrice.toString(),
        gas_tx_hash: recorded.tx_hash.toLowerCase(),
      });
    } finally {
      second.daemon.kill("SIGTERM");
      await exitOf(second.daemon, STEP_TIMEOUT_MS).catch(() => second.daemon.kill("SIGKILL"));
    }
  }, 180_000);
});
