import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import type { Config } from "../../src/config/types.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import type { Facilitator } from "../../src/settle/facilitator.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { postgresBackend, stopFileBackends } from "../helpers/backends.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";
import { createDevnetFacilitator } from "../helpers/devnetFacilitator.js";

/*
 * Two facilitators on one Postgres database, in two processes (the daemon, and this test's own), one
 * relayer key: duplicates of one payment split between them get one success and one transaction.
 */

const RELAYER_KEY_INDEX = 6;
let devnet: Devnet;
let chain: PublicClient;
let dir: string;
let daemon: ReturnType<typeof spawnCli> | undefined;
let daemonUrl: string;
let store: Store;
let facilitator: Facilitator;
let offer: ExactOffer;

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl) });
  const domain = await readTokenDomain(chain, devnet.token);
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
    amount: 5_000n,
  };
  const database = (await postgresBackend.freshDatabase()) as Config["database"];
  dir = mkdtempSync(join(tmpdir(), "flashindex-settle-two-"));
  const configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { schema: database.schema },
    metrics: { enabled: false },
    facilitator: { enabled: true, port: 0 },
  });
  daemon = spawnCli(["start", "--config", configPath], {
    FLASHINDEX_RELAYER_KEY: devnet.privateKeys[RELAYER_KEY_INDEX]!,
    FLASHINDEX_DATABASE_URL: database.url!,
  });
  daemonUrl = await waitFor(
    () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon!.output().stdout)?.[1],
    60_000,
    `the daemon's facilitator\n${daemon.output().stderr}`,
    50,
  );

  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl] },
    database,
    logLevel: "silent",
  });
  store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  const client = createRpcClient(testDeps(config));
  const { logger } = createMemoryLogger("silent");
  const relayer = privateKeyToAccount(devnet.privateKeys[RELAYER_KEY_INDEX]!);
  const relay = createCaptureRelay({ client, store, chainId: devnet.chainId, relayer, logger });
  facilitator = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayer.address,
  );
}, 120_000);

afterAll(async () => {
  if (daemon !== undefined && daemon.exitCode === null) {
    const exited = new Promise((resolve) => daemon!.once("exit", resolve));
    daemon.kill("SIGTERM");
    await exited;
  }
  await store?.close();
  await devnet?.stop();
  await stopFileBackends();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("duplicates across two processes on one Postgres database", () => {
  test("ten identical /settle, five to the daemon and five to this process at once: one success, one transaction", async () => {
    const relayer = privateKeyToAccount(devnet.privateKeys[RELAYER_KEY_INDEX]!).address;
    const payer = privateKeyToAccount(devnet.privateKeys[1]!);
    const body = await referencePaymentBody(payer, offer);
    const countBefore = await chain.getTransactionCount({ address: relayer, blockTag: "pending" });
    const viaDaemon = () =>
      fetch(`${daemonUrl}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<Record<string, unknown>>);
    const viaHere = () =>
      facilitator
        .settle(structuredClone(body))
        .then((answer) => answer.body as unknown as Record<string, unknown>);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? viaDaemon() : viaHere())),
    );

    const successes = answers.filter((a) => a.success === true);
    expect(successes, JSON.stringify(answers)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.success !== true))
      expect(refused).toMatchObject({ errorReason: "invalid_exact_evm_nonce_already_used" });
    const { from, nonce } = body.paymentPayload.payload.authorization as {
      from: Address;
      nonce: Hex;
    };
    await waitFor(
      async () =>
        (await chain.getTransactionCount({ address: relayer, blockTag: "latest" })) >=
        countBefore + 1
          ? true
          : undefined,
      20_000,
      "the settlement in a block",
      100,
    );
    expect(
      await chain.readContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "authorizationState",
        args: [from, nonce],
      }),
    ).toBe(true);
    // One relayer transaction, none pending: neither process sent a second one.
    expect(await chain.getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(
      countBefore + 1,
    );
    const order = await store.captures.findOrder(devnet.chainId, devnet.token, from, nonce);
    expect(await store.settlements.get(order!.id)).toMatchObject({
      state: "succeeded",
      txHash: (successes[0]!.transaction as string).toLowerCase(),
    });
  }, 120_000);
});
