import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  stringToHex,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import type { SyncSendOptions } from "../../src/authorization/captureSyncSend.js";
import { readTokenDomain, type TokenDomain } from "../../src/authorization/eip3009.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics, type Metrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "../helpers/backends.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { createDevnetFacilitator } from "../helpers/devnetFacilitator.js";
import { waitFor } from "../helpers/fixtures.js";
import { untaggedEstimateAtLatest } from "../helpers/rewritingRpcProxy.js";
import { startSyncSendProxy } from "../helpers/syncSendProxy.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";

/*
 * Issue 43 item 2: a settle's capture sent by eth_sendRawTransactionSync (EIP-7966) where the
 * endpoint serves it, answered from the receipt the send brings; plain sends where it does not;
 * the receipt poller as the hedge against base/base#3826. The devnet makes flashblocks and blocks
 * only when a test does; the facilitator reads it through a proxy that counts calls by method and
 * can play an endpoint without the method.
 */

let devnet: Devnet;
let chain: PublicClient;
let store: Store;
let client: RpcClient;
let domain: TokenDomain;
let shop: PrivateKeyAccount;
let proxy: Awaited<ReturnType<typeof startSyncSendProxy>>;
let pump: NodeJS.Timeout | undefined;

const SYNC = "eth_sendRawTransactionSync";
const PLAIN = "eth_sendRawTransaction";
const RECEIPT = "eth_getTransactionReceipt";
/** The sync send's wait as the daemon asks it (captureDriver.ts): 6 s, within the settle's 10 s. */
const SYNC_TIMEOUT_MS = 6_000;
/** A hedge that never starts within a test: every receipt the settle uses came with its send. */
const NO_HEDGE: SyncSendOptions = { timeoutMs: SYNC_TIMEOUT_MS, hedgeAfterMs: 600_000 };

const admin = (method: string, params: unknown[] = []) =>
  fetch(devnet.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  }).then((r) => r.json() as Promise<{ result?: unknown; error?: unknown }>);

/** Flashblocks every 50 ms, and a block every 400 ms when `blocks`, while `run` runs. */
async function withMovingChain<T>(run: () => Promise<T>, blocks = true): Promise<T> {
  let ticks = 0;
  pump = setInterval(
    () => void admin(blocks && ++ticks % 8 === 0 ? "devnet_mine" : "devnet_flashblock"),
    50,
  );
  try {
    return await run();
  } finally {
    clearInterval(pump);
    pump = undefined;
  }
}

async function seal(): Promise<void> {
  await admin("devnet_flashblock");
  await admin("devnet_mine");
}

/** A fresh payer (no ETH: it only signs) holding exactly `amount` of the token, sealed. */
async function fundedPayer(tag: string, amount: bigint): Promise<PrivateKeyAccount> {
  const payer = privateKeyToAccount(keccak256(stringToHex(`sync-send ${tag} ${Math.random()}`)));
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.privateKeys[0]!),
    transport: http(devnet.httpUrl),
  });
  await deployer.writeContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "mint",
    args: [payer.address, amount],
    chain: null,
    nonce: await chain.getTransactionCount({
      address: deployer.account.address,
      blockTag: "pending",
    }),
  });
  await seal();
  return payer;
}

const offerOf = (amount: bigint): ExactOffer => ({
  chainId: devnet.chainId,
  token: devnet.token,
  name: domain.name,
  version: domain.version,
  payTo: shop.address,
  amount,
});

/**
 * A capture relay of its own (its own probe of the endpoint, its own relayer key) and a
 * facilitator over it, with the relay's log lines and broadcast metric.
 */
function settler(relayerKeyIndex: number, sendSync: SyncSendOptions) {
  const relayer = privateKeyToAccount(devnet.privateKeys[relayerKeyIndex]!);
  const { logger, lines } = createMemoryLogger("info");
  const metrics: Metrics = createMetrics({ defaultMetrics: false });
  const relay = createCaptureRelay({
    client,
    store,
    chainId: devnet.chainId,
    relayer,
    logger,
    metrics,
    pollingIntervalMs: 10,
    sendSync,
  });
  const facilitator = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayer.address,
  );
  return {
    settle: async (body: unknown) =>
      (await facilitator.settle(body)).body as Record<string, unknown>,
    /** Captures handed to the node by `method`. */
    broadcasts: async (method: string) =>
      (await metrics.captureBroadcasts.get()).values
        .filter((v) => v.labels.method === method)
        .reduce((sum, v) => sum + v.value, 0),
    probes: () => lines.filter((l) => l.msg === "Probed sync send"),
  };
}

/** The hash of the capture of `nonce` by `payer` once the devnet's pool holds it. */
async function pooled(payer: PrivateKeyAccount, nonce: Hex): Promise<Hex> {
  return waitFor(
    async () => {
      const order = await store.captures.findOrder(
        devnet.chainId,
        devnet.token,
        payer.address,
        nonce,
      );
      const capture = order === undefined ? undefined : await store.captures.get(order.id);
      if (capture === undefined) return undefined;
      const tx = await admin("eth_getTransactionByHash", [capture.txHash]);
      return tx.result === null || tx.result === undefined ? undefined : capture.txHash;
    },
    20_000,
    `the capture of ${nonce} in the pool`,
    10,
  );
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl) });
  domain = await readTokenDomain(chain, devnet.token);
  shop = privateKeyToAccount(devnet.privateKeys[2]!);
  // As a Base node reads an estimate without a block tag: at latest. (Calls at `pending` the
  // devnet answers from its pre-confirmed state, with no mempool transaction, as Base does.)
  proxy = await startSyncSendProxy(devnet.httpUrl, untaggedEstimateAtLatest);
  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [proxy.url] },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  client = createRpcClient(testDeps(config));
}, 60_000);

afterAll(async () => {
  if (pump !== undefined) clearInterval(pump);
  await store?.close();
  await proxy?.close();
  await devnet?.stop();
});

describe("eth_sendRawTransactionSync where the endpoint serves it", () => {
  test("a settle through a front that serves it answers from the receipt its send brought: no receipt is polled, one estimate judges it", async () => {
    const relay = settler(4, NO_HEDGE);
    const payer = await fundedPayer("served", 500_000n);
    const body = await referencePaymentBody(payer, offerOf(200_000n));
    const receiptsBefore = proxy.calls(RECEIPT);
    const judging = ["eth_call", "eth_getCode", "eth_estimateGas"] as const;
    const judgedBefore = judging.map((method) => proxy.calls(method));

    const answer = await withMovingChain(() => relay.settle(body));

    expect(answer, JSON.stringify(answer)).toMatchObject({ success: true, payer: payer.address });
    expect(proxy.calls(RECEIPT) - receiptsBefore).toBe(0);
    // An EOA's payment is judged by the node in one call, whose gas the capture signs with: its
    // signature is recovered locally, the nonce and the balance are the token's own checks.
    expect(judging.map((method, i) => proxy.calls(method) - judgedBefore[i]!)).toEqual([0, 0, 1]);
    expect(await relay.broadcasts(SYNC)).toBe(1);
    expect(await relay.broadcasts(PLAIN)).toBe(0);
    expect(relay.probes()).toMatchObject([{ served: true }]);
    await seal();
    const receipt = await chain.getTransactionReceipt({ hash: answer.transaction as Hex });
    expect(receipt.status).toBe("success");
  }, 60_000);

  test("an endpoint without the method (-32601) is probed once; every later settle sends plainly", async () => {
    const relay = settler(5, NO_HEDGE);
    proxy.state.mode = "methodNotFound";
    try {
      const refusedBefore = proxy.state.syncRefused;
      const plainBefore = proxy.calls(PLAIN);
      for (const tag of ["first", "second", "third"]) {
        const payer = await fundedPayer(`unserved ${tag}`, 100_000n);
        const body = await referencePaymentBody(payer, offerOf(100_000n));
        const answer = await withMovingChain(() => relay.settle(body));
        expect(answer, JSON.stringify(answer)).toMatchObject({ success: true });
      }
      expect(proxy.state.syncRefused - refusedBefore).toBe(1);
      expect(proxy.calls(PLAIN) - plainBefore).toBe(3);
      expect(await relay.broadcasts(PLAIN)).toBe(3);
      expect(await relay.broadcasts(SYNC)).toBe(0);
      expect(relay.probes()).toMatchObject([{ served: false }]);
    } finally {
      proxy.state.mode = "serve";
    }
  }, 90_000);

  test("a transport failure during the probe decides nothing: the next settle probes again and sends in one round trip", async () => {
    const relay = settler(6, NO_HEDGE);
    proxy.state.mode = "cutConnection";
    const cutBefore = proxy.state.syncCut;
    try {
      const payer = await fundedPayer("cut", 100_000n);
      const body = await referencePaymentBody(payer, offerOf(100_000n));
      const answer = await withMovingChain(() => relay.settle(body));
      expect(answer, JSON.stringify(answer)).toMatchObject({ success: true });
    } finally {
      proxy.state.mode = "serve";
    }
    expect(proxy.state.syncCut - cutBefore).toBeGreaterThan(0);
    expect(await relay.broadcasts(PLAIN)).toBe(1);
    expect(relay.probes()).toEqual([]);

    const payer = await fundedPayer("after cut", 100_000n);
    const body = await referencePaymentBody(payer, offerOf(100_000n));
    const answer = await withMovingChain(() => relay.settle(body));
    expect(answer, JSON.stringify(answer)).toMatchObject({ success: true });
    expect(await relay.broadcasts(SYNC)).toBe(1);
    expect(relay.probes()).toMatchObject([{ served: true }]);
  }, 90_000);

  test("the race of base/base#3826 (the send misses the flashblock): the poller's hedge answers, the same answer, while the send still waits", async () => {
    const relay = settler(7, { timeoutMs: SYNC_TIMEOUT_MS });
    const payer = await fundedPayer("race", 300_000n);
    const body = await referencePaymentBody(payer, offerOf(300_000n));
    await admin("devnet_setFaults", [{ sendSyncMissesFlashblock: true }]);
    let waiting: number;
    let answer: Record<string, unknown>;
    try {
      // Flashblocks only: the send can answer with no canonical receipt, only at its timeout.
      answer = await withMovingChain(async () => {
        const settled = await relay.settle(body);
        waiting = proxy.state.syncInFlight;
        return settled;
      }, false);
    } finally {
      await admin("devnet_setFaults", [{}]);
    }
    const hash = answer.transaction as Hex;
    expect(answer).toEqual({
      success: true,
      payer: payer.address,
      transaction: hash,
      network: `eip155:${devnet.chainId}`,
      amount: "300000",
    });
    // Answered while the sync send was still waiting for its flashblock: the hedge did.
    expect(waiting!).toBe(1);
    expect(await relay.broadcasts(SYNC)).toBe(1);
    // The block comes: the late sync answer changes nothing.
    await seal();
    await waitFor(() => proxy.state.syncInFlight === 0, 10_000, "the sync send answered");
    expect((await chain.getTransactionReceipt({ hash })).status).toBe("success");
  }, 60_000);

  test("a sync answer with a reverted receipt: the settle fails with the transaction as today (two payments overdrawing one balance)", async () => {
    const relay = settler(8, NO_HEDGE);
    // The probe decided first: both captures below go by the sync send.
    const warm = await fundedPayer("warm", 100_000n);
    const warmBody = await referencePaymentBody(warm, offerOf(100_000n));
    expect(await withMovingChain(() => relay.settle(warmBody))).toMatchObject({ success: true });

    const payer = await fundedPayer("overdraw", 1_000_000n);
    const bodies = [
      await referencePaymentBody(payer, offerOf(800_000n)),
      await referencePaymentBody(payer, offerOf(800_000n)),
    ];
    const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce as Hex);
    const receiptsBefore = proxy.calls(RECEIPT);
    const answers = Promise.all(bodies.map((body) => relay.settle(body)));
    // Both in the pool before one flashblock includes them: the second reverts in it.
    const hashes = await Promise.all(nonces.map((nonce) => pooled(payer, nonce)));
    await admin("devnet_flashblock");
    const settled = await answers;

    expect(settled.filter((a) => a.success === true)).toHaveLength(1);
    const failed = settled.find((a) => a.success !== true)!;
    expect(failed).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_transaction_failed",
      payer: payer.address,
      network: `eip155:${devnet.chainId}`,
    });
    expect(hashes).toContain(failed.transaction);
    expect(proxy.calls(RECEIPT) - receiptsBefore).toBe(0);
    expect(await relay.broadcasts(SYNC)).toBe(3);

    await seal();
    const reverted = await chain.getTransactionReceipt({ hash: failed.transaction as Hex });
    expect(reverted.status).toBe("reverted");
    const lost = nonces[hashes.indexOf(failed.transaction as Hex)]!;
    const order = await store.captures.findOrder(devnet.chainId, devnet.token, payer.address, lost);
    expect(order).toMatchObject({ state: "authorized" });
    expect((await store.listTransitions(order!.id)).at(-1)).toMatchObject({
      fromState: "capturing",
      toState: "authorized",
      cause: "capture_reverted",
      txHash: (failed.transaction as string).toLowerCase(),
    });
  }, 90_000);
});
