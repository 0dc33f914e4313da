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
import { CRASH_AT_ENV, type CrashStep } from "../../src/ops/crashPoint.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

let devnet: Devnet;
let client: PublicClient;
let dir: string;
let dbPath: string;
let configPath: string;
let offer: ExactOffer;
let relayer: Address;
let firstBlock: bigint;
const daemons: Array<ReturnType<typeof spawnCli>> = [];
/** Longest wait for a /settle answer or a daemon's exit: a case fails with a reason, never at the test's timeout. */
const STEP_TIMEOUT_MS = 30_000;

/** Starts the daemon (its facilitator on a new port) and returns it with the facilitator's URL. */
async function startDaemon(
  env: NodeJS.ProcessEnv = {},
): Promise<{ daemon: ReturnType<typeof spawnCli>; url: string }> {
  const daemon = spawnCli(["start", "--config", configPath], {
    FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
    ...env,
  });
  daemons.push(daemon);
  const url = await waitFor(
    () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon.output().stdout)?.[1],
    60_000,
    `the facilitator\n${daemon.output().stderr}`,
    50,
  );
  return { daemon, url };
}

/** The daemon's last output, for a failure's message. */
function tail(daemon: ReturnType<typeof spawnCli>): string {
  const { stdout, stderr } = daemon.output();
  return `stdout:\n${stdout.slice(-4_000)}\nstderr:\n${stderr.slice(-2_000)}`;
}

/** Resolves when `daemon` has exited; rejects with `what` and its output after `ms`. */
function exitOf(daemon: ReturnType<typeof spawnCli>, ms: number, what: string): Promise<void> {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what}: still running after ${ms} ms\n${tail(daemon)}`)),
      ms,
    );
    daemon.once("exit", () => (clearTimeout(timer), resolve()));
  });
}

/** Ends `daemon` (SIGTERM, SIGKILL if it lingers) so no daemon of a failed case outlives it. */
async function stop(
  daemon: ReturnType<typeof spawnCli>,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<void> {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return;
  const exited = exitOf(daemon, STEP_TIMEOUT_MS, `the daemon after ${signal}`);
  daemon.kill(signal);
  await exited.catch(async (error: unknown) => {
    daemon.kill("SIGKILL");
    await exitOf(daemon, STEP_TIMEOUT_MS, "the daemon after SIGKILL");
    throw error;
  });
}

async function settle(url: string, body: unknown): Promise<Record<string, unknown>> {
  const signal = AbortSignal.timeout(STEP_TIMEOUT_MS);
  const response = await fetch(`${url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  return (await response.json()) as Record<string, unknown>;
}

/** The database as a reader sees it (the daemon holds it for writing). */
function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new DatabaseConstructor(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** Transactions from the relayer to the token whose calldata carries `nonce`, in every block so far. */
async function relayedCarrying(nonce: Hex): Promise<Hex[]> {
  const head = await client.getBlockNumber();
  const found: Hex[] = [];
  for (let number = firstBlock; number <= head; number++) {
    const block = await client.getBlock({ blockNumber: number, includeTransactions: true });
    for (const tx of block.transactions)
      if (
        tx.from.toLowerCase() === relayer.toLowerCase() &&
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
const authorizationOf = (body: Awaited<ReturnType<typeof referencePaymentBody>>) =>
  body.paymentPayload.payload.authorization as { from: Address; nonce: Hex };

/** A devnet (`flashblockIntervalMs` 0: no pre-confirmations, receipts only sealed) and a daemon config for one describe. */
function useDevnet(flashblockIntervalMs: number): void {
  beforeAll(() => setUp(flashblockIntervalMs), 60_000);
  afterAll(tearDown);
}

async function setUp(flashblockIntervalMs: number): Promise<void> {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs, port: 0 });
  // No cache: viem keeps getBlockNumber's answer for 4 s by default, and a head that old (ten
  // 400 ms blocks) hides the transactions relayedCarrying looks for.
  client = createPublicClient({ transport: http(devnet.httpUrl), cacheTime: 0 });
  relayer = privateKeyToAccount(devnet.privateKeys[6]!).address;
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
  dir = mkdtempSync(join(tmpdir(), "flashindex-crash-points-"));
  dbPath = join(dir, "index.db");
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: dbPath },
    metrics: { enabled: false },
    facilitator: { enabled: true, port: 0, settleWaitsFor: "preconfirmed" },
  });
}

async function tearDown(): Promise<void> {
  for (const daemon of daemons.splice(0))
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill("SIGKILL");
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

const payer = () => privateKeyToAccount(devnet.privateKeys[1]!);
const CASE =
  "killed at %s: the chain and the database agree after a restart, and the authorization is sent at most once";

describe("a settle killed with SIGKILL at each step", () => {
  useDevnet(50);
  // Broadcast before the kill (sent, pre-confirmed): it lands once and the order follows the chain.
  // Not broadcast (signed, stored): its caller got no answer, so nothing of it is ever sent, and
  // its relayer nonce is handed to the next settle: no gap, no gap filler.
  test.each<[CrashStep, boolean]>([
    ["signed", false],
    ["stored", false],
    ["sent", true],
    ["preconfirmed", true],
  ])(CASE, killAndRestart, 180_000);
});

describe("a settle killed with SIGKILL when the receipt it sees first is already sealed", () => {
  // No pre-confirmations: the wait's first receipt is a sealed one, the same step for a settle (a
  // poll on Base can miss a short pre-confirmation too). It used to answer instead of dying.
  useDevnet(0);
  test.each<[CrashStep, boolean]>([["preconfirmed", true]])(CASE, killAndRestart, 180_000);
});

/** One case: a daemon killed at `step` mid-settle, a second one started on the same database; `lands`: the payment was broadcast before the kill. */
async function killAndRestart(step: CrashStep, lands: boolean): Promise<void> {
  const countBefore = await client.getTransactionCount({ address: relayer, blockTag: "latest" });
  const body = await referencePaymentBody(payer(), offer);
  const { from, nonce } = authorizationOf(body);

  const first = await startDaemon({ [CRASH_AT_ENV]: step });
  try {
    const exited = exitOf(first.daemon, STEP_TIMEOUT_MS, `the daemon to die at ${step}`);
    const answer = await settle(first.url, body).then(
      (a) => a,
      (error: unknown) => {
        if (error instanceof DOMException && error.name === "TimeoutError")
          throw new Error(
            `no answer and no crash at ${step} within ${STEP_TIMEOUT_MS} ms\n${tail(first.daemon)}`,
          );
        return "no answer" as const;
      },
    );
    // A daemon that answered did not die at the step: say so now, not at the test's timeout.
    if (answer !== "no answer")
      throw new Error(
        `the daemon answered instead of dying at ${step}: ${JSON.stringify(answer)}\n${tail(first.daemon)}`,
      );
    await exited;
  } finally {
    await stop(first.daemon, "SIGKILL");
  }
  expect(first.daemon.signalCode).toBe("SIGKILL");
  expect(first.daemon.output().stderr).toContain(`test crash point ${step}`);

  const second = await startDaemon();
  try {
    const orderId = query<{ id: number }>(
      "SELECT id FROM orders WHERE nonce = ?",
      nonce.toLowerCase(),
    )[0]!.id;
    if (lands) {
      await waitFor(
        () =>
          query<{ state: string }>("SELECT state FROM orders WHERE id = ?", orderId)[0]?.state ===
          "captured",
        30_000,
        "the order captured",
        100,
      );
    } else if (step === "stored") {
      await waitFor(
        () =>
          query<{ status: string }>(
            "SELECT status FROM order_captures WHERE order_id = ?",
            orderId,
          )[0]?.status === "abandoned",
        30_000,
        "the unsent settle abandoned",
        100,
      );
      expect(
        query(
          "SELECT cause FROM order_transitions WHERE order_id = ? ORDER BY id DESC LIMIT 1",
          orderId,
        ),
      ).toEqual([{ cause: "settle_never_sent" }]);
    } else {
      await waitFor(
        () =>
          query<{ state: string }>(
            "SELECT state FROM relayer_nonces WHERE holder = ?",
            `capture:${orderId}`,
          )[0]?.state === "released"
            ? true
            : undefined,
        30_000,
        "the reservation released",
        100,
      );
    }

    // The next payment takes the next nonce the chain expects (the released one, if any): it lands without a gap filler.
    const next = await referencePaymentBody(payer(), offer);
    const nextAnswer = await settle(second.url, next);
    expect(nextAnswer.success, JSON.stringify(nextAnswer)).toBe(true);
    const expected = countBefore + (lands ? 2 : 1);
    await waitFor(
      async () =>
        (await client.getTransactionCount({ address: relayer, blockTag: "latest" })) === expected
          ? true
          : undefined,
      30_000,
      `${expected} relayer transactions`,
      100,
    );
    expect(await client.getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(
      expected,
    );
    expect(second.daemon.output().stdout).not.toContain("Filled relayer nonce gap");

    // The chain: the killed payment used once or never, carried by at most one relayer transaction.
    expect(await used(from, nonce)).toBe(lands);
    expect(await relayedCarrying(nonce)).toHaveLength(lands ? 1 : 0);
    const orderState = query<{ state: string }>(
      "SELECT state FROM orders WHERE id = ?",
      orderId,
    )[0]!.state;
    expect(orderState).toBe(lands ? "captured" : "authorized");

    // The book against the chain: every nonce below the relayer's count went to a broadcast; nothing is held above it.
    const count = await client.getTransactionCount({ address: relayer, blockTag: "latest" });
    const book = query<{ nonce: number; state: string }>(
      "SELECT nonce, state FROM relayer_nonces WHERE relayer = ? ORDER BY nonce",
      relayer.toLowerCase(),
    );
    expect(
      book.filter((e) => e.nonce < count && !["broadcast", "landed"].includes(e.state)),
    ).toEqual([]);
    expect(book.filter((e) => e.nonce >= count && e.state !== "released")).toEqual([]);
  } finally {
    await stop(second.daemon);
  }
}
