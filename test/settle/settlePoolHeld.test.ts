import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  keccak256,
  parseEventLogs,
  stringToHex,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay, type CaptureRelay } from "../../src/authorization/captureRelay.js";
import { readTokenDomain, type TokenDomain } from "../../src/authorization/eip3009.js";
import { createRelayerPool } from "../../src/authorization/relayerPool.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import {
  startFacilitatorServer,
  type FacilitatorServer,
} from "../../src/settle/facilitatorServer.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "../helpers/backends.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { createDevnetFacilitator } from "../helpers/devnetFacilitator.js";
import { waitFor } from "../helpers/fixtures.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";
import { httpRpc } from "../helpers/httpRpc.js";

/*
 * A pool of three relayers behind one facilitator (issue 43), one of them held back by the
 * devnet's Base stand-in (devnet_holdSenders: its transactions sit in the node's pool and no
 * flashblock includes them, as a stuck relayer's do on Base). The reference x402 client signs
 * every payment; what the facilitator answers is compared with the chain.
 */

/** A relayer counts as stuck this soon, so the test does not wait the production 5 s. */
const STUCK_AFTER_MS = 500;
/** Settles sent at once while the first relayer is held. */
const WHILE_HELD = 6;
let devnet: Devnet;
let chain: PublicClient;
let store: Store;
let domain: TokenDomain;
let server: FacilitatorServer;
let relay: CaptureRelay;
let shop: PrivateKeyAccount;
let relayers: PrivateKeyAccount[];
let firstBlock: bigint;

const offerOf = (amount: bigint): ExactOffer => ({
  chainId: devnet.chainId,
  token: devnet.token,
  name: domain.name,
  version: domain.version,
  payTo: shop.address,
  amount,
});

/** One of the stand-in's admin methods. */
const admin = (method: string, params: unknown[]) => httpRpc(devnet.httpUrl, method, params);

async function post(body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** Which relayer sent a settle's transaction, as the chain says. */
const senderOf = async (answer: Record<string, unknown>): Promise<Address> =>
  getAddress((await chain.getTransaction({ hash: answer.transaction as Hex })).from);
const standingOf = (relayer: Address) =>
  relay.standings(Date.now()).find((s) => s.address === relayer);

/** A fresh payer (no ETH: it only signs) holding `amount` of the token. */
async function fundedPayer(amount: bigint): Promise<PrivateKeyAccount> {
  const payer = privateKeyToAccount(keccak256(stringToHex(`pool held ${Math.random()}`)));
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.privateKeys[0]!),
    transport: http(devnet.httpUrl),
  });
  const hash = await deployer.writeContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "mint",
    args: [payer.address, amount],
    chain: null,
  });
  await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  return payer;
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl), cacheTime: 0 });
  domain = await readTokenDomain(chain, devnet.token);
  firstBlock = await chain.getBlockNumber();
  shop = privateKeyToAccount(devnet.privateKeys[2]!);
  relayers = [6, 7, 8].map((i) => privateKeyToAccount(devnet.privateKeys[i]!));
  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl] },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  const client = createRpcClient(testDeps(config));
  const { logger } = createMemoryLogger("silent");
  relay = createCaptureRelay({
    client,
    store,
    chainId: devnet.chainId,
    relayer: undefined,
    pool: createRelayerPool(relayers, { stuckAfterMs: STUCK_AFTER_MS }),
    logger,
    pollingIntervalMs: 10,
  });
  const facilitator = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayers[0]!.address,
    { signers: relayers.map((r) => r.address), settleTimeoutMs: 30_000 },
  );
  server = await startFacilitatorServer({ logger }, facilitator, {
    host: "127.0.0.1",
    port: 0,
    authToken: undefined,
    maxBodyBytes: 65_536,
    settleTimeoutMs: 30_000,
    network: `eip155:${devnet.chainId}`,
  });
}, 60_000);

afterAll(async () => {
  await admin("devnet_holdSenders", [[]]).catch(() => undefined);
  await server?.close();
  await store?.close();
  await devnet?.stop();
});

describe("a pool of three relayers, one held back by the stand-in", () => {
  test("settles go on through the two others once the held one is stuck; released, its capture lands and it takes settles again", async () => {
    const amount = 10_000n;
    const payer = await fundedPayer(amount * BigInt(WHILE_HELD + 2));
    const [held, ...others] = relayers as [PrivateKeyAccount, ...PrivateKeyAccount[]];
    const countsBefore = await Promise.all(
      relayers.map((r) => chain.getTransactionCount({ address: r.address })),
    );

    // Every relayer idle: the first settle goes to the first relayer, whose sends the node takes
    // and no flashblock includes.
    await admin("devnet_holdSenders", [[held.address]]);
    const first = post(await referencePaymentBody(payer, offerOf(amount)));
    const stuck = await waitFor(
      () => (standingOf(held.address)?.stuck === true ? standingOf(held.address) : undefined),
      20_000,
      "the held relayer stuck",
      20,
    );
    expect(stuck).toMatchObject({ stuck: true, pending: 1 });

    // The others go on: settles sent at once are all settled, by the two free relayers only.
    const bodies = await Promise.all(
      Array.from({ length: WHILE_HELD }, () => referencePaymentBody(payer, offerOf(amount))),
    );
    const answers = await Promise.all(bodies.map((body) => post(body)));
    expect(
      answers.filter((a) => a.success !== true),
      JSON.stringify(answers),
    ).toEqual([]);
    const carriers = await Promise.all(answers.map(senderOf));
    const byRelayer = relayers.map((r) => carriers.filter((c) => c === r.address).length);
    expect(byRelayer[0], `carried per relayer: ${byRelayer.join(", ")}`).toBe(0);
    expect(
      others.every((_, i) => byRelayer[i + 1]! > 0),
      `carried per relayer: ${byRelayer.join(", ")}`,
    ).toBe(true);
    // Still held: the first settle has no answer yet, its relayer still stuck, its nonce unused.
    expect(standingOf(held.address)).toMatchObject({ stuck: true, pending: 1 });
    expect(await chain.getTransactionCount({ address: held.address })).toBe(countsBefore[0]);

    // Released: the held transaction is pre-confirmed, its settle answers, the relayer is unstuck.
    await admin("devnet_holdSenders", [[]]);
    const firstAnswer = await first;
    expect(firstAnswer, JSON.stringify(firstAnswer)).toMatchObject({ success: true });
    expect(await senderOf(firstAnswer)).toBe(held.address);
    expect(standingOf(held.address)).toMatchObject({ stuck: false, pending: 0 });
    // Every relayer idle again: the next settle goes to the first one, and is settled.
    const again = await post(await referencePaymentBody(payer, offerOf(amount)));
    expect(again, JSON.stringify(again)).toMatchObject({ success: true });
    expect(await senderOf(again)).toBe(held.address);

    // Sealed, each payment's AuthorizationUsed is on chain once, and nothing was sent twice: each
    // relayer's nonce moved by exactly the payments it carried (the held one: its first and last).
    const nonces = [...bodies.map((b) => b.paymentPayload.payload.authorization.nonce as Hex)];
    await waitFor(
      async () =>
        (await chain.readContract({
          address: devnet.token,
          abi: flashTestTokenAbi,
          functionName: "balanceOf",
          args: [payer.address],
        })) === 0n || undefined,
      20_000,
      "the payments sealed",
      100,
    );
    const used = parseEventLogs({
      abi: flashTestTokenAbi,
      logs: await chain.getLogs({ address: devnet.token, fromBlock: firstBlock }),
    }).flatMap((e) =>
      e.eventName === "AuthorizationUsed" && e.args.authorizer === payer.address
        ? [(e.args as { nonce: Hex }).nonce]
        : [],
    );
    expect(used).toHaveLength(WHILE_HELD + 2);
    expect(new Set(used).size).toBe(WHILE_HELD + 2);
    for (const nonce of nonces) expect(used).toContain(nonce);
    const countsAfter = await Promise.all(
      relayers.map((r) => chain.getTransactionCount({ address: r.address })),
    );
    expect(countsAfter.map((c, i) => c - countsBefore[i]!)).toEqual([
      2,
      byRelayer[1]!,
      byRelayer[2]!,
    ]);
  }, 120_000);
});
