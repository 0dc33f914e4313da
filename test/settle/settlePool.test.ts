import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  keccak256,
  parseEventLogs,
  parseTransaction,
  recoverTransactionAddress,
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
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
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

/*
 * A pool of two relayers behind one facilitator (issue 43), on a devnet that makes flashblocks and
 * blocks by itself, with the reference x402 client signing every payment. What the facilitator
 * answers is compared with the chain: each payment's Transfer and AuthorizationUsed exactly once.
 */

/** A relayer counts as stuck this soon, so the held-back case does not wait the production 5 s. */
const STUCK_AFTER_MS = 500;
const PAYMENTS = 20;
let devnet: Devnet;
let chain: PublicClient;
let store: Store;
let domain: TokenDomain;
let server: FacilitatorServer;
let relay: CaptureRelay;
let shop: PrivateKeyAccount;
let relayers: PrivateKeyAccount[];
let floored: ReturnType<typeof createDevnetFacilitator>;
const metrics = createMetrics({ defaultMetrics: false });
let firstBlock: bigint;
/** Raw transactions of the held-back relayer that the node never got, in the order sent. */
const heldBack: Hex[] = [];
let holding: Address | undefined;

const balanceOf = (account: Address) =>
  chain.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "balanceOf",
    args: [account],
  });
const offerOf = (amount: bigint): ExactOffer => ({
  chainId: devnet.chainId,
  token: devnet.token,
  name: domain.name,
  version: domain.version,
  payTo: shop.address,
  amount,
});

/**
 * The devnet as the relay reads it, with one relayer's transactions held back: the node answers
 * their sends as accepted and never sees them, as a sequencer that leaves a sender's transactions
 * out of its flashblocks would.
 */
function holdingBack(client: RpcClient): RpcClient {
  return {
    ...client,
    async request(method, params, parse) {
      if (method === "eth_sendRawTransaction" && holding !== undefined) {
        const raw = params[0] as Hex;
        const from = await recoverTransactionAddress({ serializedTransaction: raw as never });
        if (from.toLowerCase() === holding.toLowerCase()) {
          heldBack.push(raw);
          const hash = keccak256(raw);
          return (parse === undefined ? hash : await parse(hash)) as never;
        }
      }
      return client.request(method, params, parse);
    },
  };
}

async function post(body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** A fresh payer (no ETH: it only signs) holding `amount` of the token. */
async function fundedPayer(tag: string, amount: bigint): Promise<PrivateKeyAccount> {
  const payer = privateKeyToAccount(keccak256(stringToHex(`settle-pool ${tag} ${Math.random()}`)));
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

/** Every Transfer and AuthorizationUsed of the token since the suite started, once the chain has sealed them. */
async function tokenEvents() {
  const logs = await chain.getLogs({
    address: devnet.token,
    fromBlock: firstBlock,
    toBlock: "latest",
  });
  return parseEventLogs({ abi: flashTestTokenAbi, logs });
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl) });
  domain = await readTokenDomain(chain, devnet.token);
  firstBlock = await chain.getBlockNumber();
  shop = privateKeyToAccount(devnet.privateKeys[2]!);
  relayers = [
    privateKeyToAccount(devnet.privateKeys[8]!),
    privateKeyToAccount(devnet.privateKeys[9]!),
  ];
  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl] },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  const client = holdingBack(createRpcClient(testDeps(config)));
  const { logger } = createMemoryLogger("silent");
  const pool = createRelayerPool(relayers, { stuckAfterMs: STUCK_AFTER_MS });
  // The gas metrics' payee label: the shop alone is listed; any other payee counts as "other".
  const payeeLabel = (payee: Address) =>
    payee.toLowerCase() === shop.address.toLowerCase() ? "shop" : "other";
  relay = createCaptureRelay({
    client,
    store,
    chainId: devnet.chainId,
    relayer: undefined,
    pool,
    logger,
    pollingIntervalMs: 10,
    metrics,
    payeeLabel,
  });
  const facilitator = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayers[0]!.address,
    { signers: relayers.map((r) => r.address), settleTimeoutMs: 20_000 },
  );
  floored = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayers[0]!.address,
    { minAmounts: new Map([[devnet.token.toLowerCase(), 1_000n]]) },
  );
  server = await startFacilitatorServer({ logger }, facilitator, {
    host: "127.0.0.1",
    port: 0,
    authToken: undefined,
    maxBodyBytes: 65_536,
    settleTimeoutMs: 20_000,
    network: `eip155:${devnet.chainId}`,
  });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await store?.close();
  await devnet?.stop();
});

describe("a pool of relayers", () => {
  test("two relayers share 20 concurrent settles: every one settled, each payment's Transfer and AuthorizationUsed on chain exactly once", async () => {
    const amount = 10_000n;
    const payer = await fundedPayer("share", amount * BigInt(PAYMENTS));
    const shopBefore = await balanceOf(shop.address);
    const countsBefore = await Promise.all(
      relayers.map((r) => chain.getTransactionCount({ address: r.address, blockTag: "pending" })),
    );
    const bodies = await Promise.all(
      Array.from({ length: PAYMENTS }, () => referencePaymentBody(payer, offerOf(amount))),
    );
    const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce as Hex);

    const answers = await Promise.all(bodies.map((body) => post(body)));

    expect(
      answers.filter((a) => a.success !== true),
      JSON.stringify(answers),
    ).toEqual([]);
    // Which relayer sent each payment, from what the chain says sent it.
    const senders = await Promise.all(
      answers.map(async (a) =>
        (await chain.getTransaction({ hash: a.transaction as Hex })).from.toLowerCase(),
      ),
    );
    const byRelayer = relayers.map(
      (r) => senders.filter((s) => s === r.address.toLowerCase()).length,
    );
    expect(
      byRelayer.every((n) => n > 0),
      `sent per relayer: ${byRelayer.join(", ")}`,
    ).toBe(true);
    expect(byRelayer[0]! + byRelayer[1]!).toBe(PAYMENTS);

    // Sealed, every payment is on chain once: one AuthorizationUsed per nonce, one Transfer each.
    await waitFor(
      async () =>
        (await tokenEvents()).filter(
          (e) => e.eventName === "AuthorizationUsed" && e.args.authorizer === payer.address,
        ).length >= PAYMENTS || undefined,
      20_000,
      "the payments sealed",
      100,
    );
    const events = await tokenEvents();
    const used = events
      .filter((e) => e.eventName === "AuthorizationUsed" && e.args.authorizer === payer.address)
      .map((e) => (e.args as { nonce: Hex }).nonce);
    expect([...used].sort()).toEqual([...nonces].sort());
    const transfers = events.flatMap((e) =>
      e.eventName === "Transfer" && e.args.from === payer.address ? [e.args] : [],
    );
    expect(transfers).toHaveLength(PAYMENTS);
    expect(transfers.every((t) => t.to === shop.address && t.value === amount)).toBe(true);
    expect(await balanceOf(shop.address)).toBe(shopBefore + amount * BigInt(PAYMENTS));
    expect(await balanceOf(payer.address)).toBe(0n);
    // Each capture records what it cost, as its receipt on chain says (schema 17).
    for (const [i, answer] of answers.entries()) {
      const order = await store.captures.findOrder(
        devnet.chainId,
        devnet.token,
        payer.address,
        nonces[i]!,
      );
      const capture = await store.captures.get(order!.id);
      const receipt = await chain.getTransactionReceipt({ hash: answer.transaction as Hex });
      expect(capture, `payment ${i}`).toMatchObject({
        gasUsed: receipt.gasUsed,
        effectiveGasPrice: receipt.effectiveGasPrice,
      });
    }
    // The gas metrics: one observation per payment, their cost under the listed payee's label.
    const gasCount = (await metrics.captureGasUsed.get()).values.find(
      (v) => v.metricName === "flashindex_capture_gas_used_count",
    )?.value;
    expect(gasCount).toBe(PAYMENTS);
    const cost = (await metrics.captureGasCost.get()).values;
    expect(cost.map((v) => v.labels.payee)).toEqual(["shop"]);
    expect(cost[0]!.value).toBeGreaterThan(0);
    // Nothing was sent twice: each relayer's nonce moved by exactly the payments it sent.
    const countsAfter = await Promise.all(
      relayers.map((r) => chain.getTransactionCount({ address: r.address, blockTag: "pending" })),
    );
    expect(countsAfter.map((c, i) => c - countsBefore[i]!)).toEqual(byRelayer);
  }, 120_000);

  test("a relayer whose transaction is held back is skipped: the others settle, and it takes settles again once unstuck", async () => {
    const amount = 20_000n;
    const payer = await fundedPayer("stuck", amount * 4n);
    const [held, free] = relayers as [PrivateKeyAccount, PrivateKeyAccount];
    // Both relayers are idle: the first settle goes to the first relayer, whose sends are held back.
    holding = held.address;
    const firstBody = await referencePaymentBody(payer, offerOf(amount));
    const first = post(firstBody);
    await waitFor(
      () =>
        relay.standings(Date.now()).find((s) => s.address === held.address && s.stuck) ?? undefined,
      20_000,
      "the held relayer stuck",
      20,
    );
    expect(heldBack.length).toBeGreaterThan(0);

    // The others go on: later settles, sent at once, all go to the free relayer and are settled
    // (by load alone, the second of them would tie with the held relayer's one and go to it).
    const later = await Promise.all(
      [0, 1].map(async () => post(await referencePaymentBody(payer, offerOf(amount)))),
    );
    for (const answer of later) {
      expect(answer, JSON.stringify(answer)).toMatchObject({ success: true });
      expect(
        getAddress((await chain.getTransaction({ hash: answer.transaction as Hex })).from),
      ).toBe(free.address);
    }

    // The sequencer takes the held relayer's transaction at last: its settle answers, it is unstuck.
    holding = undefined;
    const raw = heldBack.at(-1)!;
    await fetch(devnet.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_sendRawTransaction",
        params: [raw],
      }),
    });
    const firstAnswer = await first;
    expect(firstAnswer, JSON.stringify(firstAnswer)).toMatchObject({
      success: true,
      transaction: keccak256(raw),
    });
    expect(parseTransaction(raw).to?.toLowerCase()).toBe(devnet.token.toLowerCase());
    expect(relay.standings(Date.now()).find((s) => s.address === held.address)).toMatchObject({
      stuck: false,
      pending: 0,
    });
    const again = await post(await referencePaymentBody(payer, offerOf(amount)));
    expect(again, JSON.stringify(again)).toMatchObject({ success: true });
    expect(getAddress((await chain.getTransaction({ hash: again.transaction as Hex })).from)).toBe(
      held.address,
    );
    // Sealed, the four payments (the held one included) moved the payer's whole balance, once.
    await waitFor(
      async () => ((await balanceOf(payer.address)) === 0n ? true : undefined),
      20_000,
      "the payments sealed",
      100,
    );
    const used = (await tokenEvents()).filter(
      (e) => e.eventName === "AuthorizationUsed" && e.args.authorizer === payer.address,
    );
    expect(used).toHaveLength(4);
  }, 120_000);

  test("facilitator.minAmount: a payment below the token's floor is refused at verify and settle with the reference's reason, nothing sent", async () => {
    const payer = await fundedPayer("floor", 10_000n);
    const counts = () =>
      Promise.all(
        relayers.map((r) => chain.getTransactionCount({ address: r.address, blockTag: "pending" })),
      );
    const before = await counts();
    const small = await referencePaymentBody(payer, offerOf(999n));
    const verified = await floored.verify(small);
    expect(verified.body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_authorization_value",
      invalidMessage: expect.stringContaining("minimum 1000"),
    });
    const settled = await floored.settle(small);
    expect(settled.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_authorization_value",
    });
    expect(await counts()).toEqual(before);
    expect(
      await store.captures.findOrder(
        devnet.chainId,
        devnet.token,
        payer.address,
        small.paymentPayload.payload.authorization.nonce as Hex,
      ),
    ).toBeUndefined();
    // At the floor it is settled.
    const enough = await floored.settle(await referencePaymentBody(payer, offerOf(1_000n)));
    expect(enough.body, JSON.stringify(enough.body)).toMatchObject({ success: true });
  }, 60_000);
});
