import { x402HTTPClient } from "@x402/core/client";
import {
  createPublicClient,
  createWalletClient,
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
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import {
  readTokenDomain,
  signCancelAuthorization,
  type TokenDomain,
} from "../../src/authorization/eip3009.js";
import type { NonceReservation } from "../../src/store/nonceBook.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import type { Facilitator } from "../../src/settle/facilitator.js";
import {
  startFacilitatorServer,
  type FacilitatorServer,
} from "../../src/settle/facilitatorServer.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "../helpers/backends.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";
import { startRewritingRpcProxy, untaggedEstimateAtLatest } from "../helpers/rewritingRpcProxy.js";
import {
  PAID_BODY,
  referenceClient,
  referencePaymentBody,
  startResourceServer,
  type ExactOffer,
  type RunningServer,
} from "../helpers/x402.js";
import { createDevnetFacilitator } from "../helpers/devnetFacilitator.js";
import { httpRpc } from "../helpers/httpRpc.js";

/*
 * One payment, at most one success, and success only for a transfer the chain made (issue 40): the
 * facilitator in this process on a devnet whose flashblocks and blocks come only when the test
 * makes them, so that two captures can be sent before either is pre-confirmed.
 */

const RELAYER_KEY_INDEX = 9;
let devnet: Devnet;
let chain: PublicClient;
let store: Store;
let domain: TokenDomain;
let facilitator: Facilitator;
let server: FacilitatorServer;
let shop: PrivateKeyAccount;
let relayer: PrivateKeyAccount;
/** Relayer nonces this process reserved in the nonce book: a refused duplicate reserves none. */
let reserved = 0;
const servers: RunningServer[] = [];
let pump: NodeJS.Timeout | undefined;
/** The devnet as the facilitator reads it: an untagged eth_estimateGas runs at latest, as on geth and reth. */
let proxy: { url: string; close: () => Promise<void> };

const admin = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);
const balanceOf = (account: Address) =>
  chain.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "balanceOf",
    args: [account],
  });
const authorizationState = (authorizer: Address, nonce: Hex) =>
  chain.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "authorizationState",
    args: [authorizer, nonce],
  });
const offerOf = (amount: bigint): ExactOffer => ({
  chainId: devnet.chainId,
  token: devnet.token,
  name: domain.name,
  version: domain.version,
  payTo: shop.address,
  amount,
});

/** Flashblocks every 50 ms and a block every 400 ms while `run` runs: a chain that moves by itself. */
async function withMovingChain<T>(run: () => Promise<T>): Promise<T> {
  let ticks = 0;
  pump = setInterval(() => void admin(++ticks % 8 === 0 ? "devnet_mine" : "devnet_flashblock"), 50);
  try {
    return await run();
  } finally {
    clearInterval(pump);
    pump = undefined;
  }
}

/** Seals everything sent so far into a block. */
async function seal(): Promise<void> {
  await admin("devnet_flashblock");
  await admin("devnet_mine");
}

/** A fresh payer (no ETH: it only signs) holding exactly `amount` of the token. */
async function fundedPayer(tag: string, amount: bigint): Promise<PrivateKeyAccount> {
  const payer = privateKeyToAccount(keccak256(stringToHex(`settle-once ${tag} ${Math.random()}`)));
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.privateKeys[0]!),
    transport: http(devnet.httpUrl),
  });
  const nonce = await chain.getTransactionCount({
    address: deployer.account.address,
    blockTag: "pending",
  });
  await deployer.writeContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "mint",
    args: [payer.address, amount],
    chain: null,
    nonce,
  });
  await seal();
  expect(await balanceOf(payer.address)).toBe(amount);
  return payer;
}

async function post(path: "verify" | "settle", body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** Waits until the order holding `nonce` has handed its capture to the node. */
async function broadcast(payer: Address, nonce: Hex): Promise<number> {
  return waitFor(
    async () => {
      const order = await store.captures.findOrder(devnet.chainId, devnet.token, payer, nonce);
      const capture = order === undefined ? undefined : await store.captures.get(order.id);
      return capture !== undefined && capture.broadcasts > 0 ? order!.id : undefined;
    },
    20_000,
    `the capture of ${nonce} sent`,
    10,
  );
}

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl) });
  domain = await readTokenDomain(chain, devnet.token);
  shop = privateKeyToAccount(devnet.privateKeys[2]!);
  relayer = privateKeyToAccount(devnet.privateKeys[RELAYER_KEY_INDEX]!);
  proxy = await startRewritingRpcProxy(devnet.httpUrl, untaggedEstimateAtLatest);
  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [proxy.url] },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  const client = createRpcClient(testDeps(config));
  const { logger } = createMemoryLogger("silent");
  // The relay reserves every nonce in the store's book: counting the book's reservations counts them all.
  const book = store.nonces;
  const counted: Store = Object.assign(Object.create(store) as Store, {
    nonces: {
      ...book,
      reserve: (reservation: NonceReservation, now: number) => (
        reserved++,
        book.reserve(reservation, now)
      ),
    },
  });
  const relay = createCaptureRelay({
    client,
    store: counted,
    chainId: devnet.chainId,
    relayer,
    logger,
    pollingIntervalMs: 10,
  });
  facilitator = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayer.address,
  );
  server = await startFacilitatorServer({ logger }, facilitator, {
    host: "127.0.0.1",
    port: 0,
    authToken: undefined,
    maxBodyBytes: 65_536,
    settleTimeoutMs: 10_000,
    network: `eip155:${devnet.chainId}`,
  });
}, 60_000);

afterAll(async () => {
  if (pump !== undefined) clearInterval(pump);
  for (const resource of servers) await resource.close();
  await server?.close();
  await store?.close();
  await proxy?.close();
  await devnet?.stop();
});

describe("success means the chain made the transfer", () => {
  test("overdraw race: a payer holding 1.0 signs two payments of 0.8, both verify, both settle at once: one success, the other fails with its reverted transaction", async () => {
    const payer = await fundedPayer("overdraw", 1_000_000n);
    const offer = offerOf(800_000n);
    const bodies = [
      await referencePaymentBody(payer, offer),
      await referencePaymentBody(payer, offer),
    ];
    for (const body of bodies)
      expect(await post("verify", body)).toMatchObject({ isValid: true, payer: payer.address });
    const shopBefore = await balanceOf(shop.address);

    const answers = Promise.all(bodies.map((body) => post("settle", body)));
    const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce as Hex);
    // Both are sent before either is pre-confirmed, as at a flashblock's pace on Base.
    const orderIds = await Promise.all(nonces.map((nonce) => broadcast(payer.address, nonce)));
    await admin("devnet_flashblock");
    const settled = await answers;

    const successes = settled.filter((a) => a.success === true);
    expect(successes, JSON.stringify(settled)).toHaveLength(1);
    const failed = settled.find((a) => a.success !== true)!;
    expect(failed).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_transaction_failed",
      payer: payer.address,
      network: `eip155:${devnet.chainId}`,
    });
    expect(failed.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    // Every answer against the chain: one transfer of 0.8 made, the other transaction reverted.
    await seal();
    const won = successes[0]!.transaction as Hex;
    const [wonReceipt, lostReceipt] = await Promise.all([
      chain.getTransactionReceipt({ hash: won }),
      chain.getTransactionReceipt({ hash: failed.transaction as Hex }),
    ]);
    expect(wonReceipt.status).toBe("success");
    expect(lostReceipt.status).toBe("reverted");
    const transfers = parseEventLogs({
      abi: flashTestTokenAbi,
      eventName: "Transfer",
      logs: [...wonReceipt.logs, ...lostReceipt.logs],
    });
    expect(transfers.map((t) => [t.args.from, t.args.to, t.args.value])).toEqual([
      [payer.address, shop.address, 800_000n],
    ]);
    expect(await balanceOf(payer.address)).toBe(200_000n);
    expect(await balanceOf(shop.address)).toBe(shopBefore + 800_000n);
    const states = await Promise.all(
      nonces.map((nonce) => authorizationState(payer.address, nonce)),
    );
    expect(states.filter(Boolean)).toHaveLength(1);

    // The failed order records why and is authorized again (its authorization is still unused).
    const lostIndex = states.indexOf(false);
    const lostOrder = await store.getOrder(orderIds[lostIndex]!);
    expect(lostOrder).toMatchObject({ state: "authorized" });
    expect((await store.listTransitions(lostOrder!.id)).at(-1)).toMatchObject({
      fromState: "capturing",
      toState: "authorized",
      cause: "capture_reverted",
      txHash: (failed.transaction as string).toLowerCase(),
    });
  }, 60_000);

  test("a buyer's own cancelAuthorization landing just before the capture: the settle is not a success", async () => {
    const payer = await fundedPayer("cancel", 1_000_000n);
    const body = await referencePaymentBody(payer, offerOf(300_000n));
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    expect(await post("verify", body)).toMatchObject({ isValid: true });
    const answer = post("settle", body);
    const orderId = await broadcast(payer.address, nonce);
    // The buyer's cancel (sent by anyone: the signature is the authority) reaches the sequencer just
    // before the capture. The capture's pending view (pre-confirmations only, on Base as on the
    // devnet) cannot see a cancel still in the mempool; the capture is taken out of the pool and
    // put back behind the cancel, so the flashblock takes the cancel first (the devnet takes its
    // pool first in, first out).
    const captureHash = (await store.captures.get(orderId))!.txHash;
    const raw = await admin<Hex>("eth_getRawTransactionByHash", [captureHash]);
    await admin("anvil_dropTransaction", [captureHash]);
    const cancel = await signCancelAuthorization(
      payer,
      { ...domain, verifyingContract: devnet.token },
      { authorizer: payer.address, nonce },
    );
    const submitter = createWalletClient({
      account: privateKeyToAccount(devnet.privateKeys[3]!),
      transport: http(devnet.httpUrl),
    });
    const cancelTx = await submitter.writeContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName: "cancelAuthorization",
      args: [payer.address, nonce, cancel.v, cancel.r, cancel.s],
      chain: null,
      gas: 200_000n,
      nonce: await chain.getTransactionCount({
        address: submitter.account.address,
        blockTag: "pending",
      }),
    });
    await admin("eth_sendRawTransaction", [raw]);
    await admin("devnet_flashblock");
    const settled = await answer;
    expect(settled.success, JSON.stringify(settled)).toBe(false);
    expect(settled).toMatchObject({ errorReason: "invalid_exact_evm_transaction_failed" });

    await seal();
    expect((await chain.getTransactionReceipt({ hash: cancelTx })).status).toBe("success");
    expect((await chain.getTransactionReceipt({ hash: settled.transaction as Hex })).status).toBe(
      "reverted",
    );
    expect(await authorizationState(payer.address, nonce)).toBe(true);
    expect(await balanceOf(payer.address)).toBe(1_000_000n);
  }, 60_000);
});

describe("verify and settle read the same view", () => {
  test("a payer funded by a transfer that is only pre-confirmed is valid at verify and settles", async () => {
    const payer = privateKeyToAccount(
      keccak256(stringToHex(`settle-once preconfirmed ${Math.random()}`)),
    );
    const deployer = createWalletClient({
      account: privateKeyToAccount(devnet.privateKeys[0]!),
      transport: http(devnet.httpUrl),
    });
    const nonce = await chain.getTransactionCount({
      address: deployer.account.address,
      blockTag: "pending",
    });
    await deployer.writeContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName: "mint",
      args: [payer.address, 500_000n],
      chain: null,
      nonce,
    });
    await admin("devnet_flashblock");
    // Pre-confirmed, not in a block: the latest state does not hold it.
    expect(
      await chain.readContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "balanceOf",
        args: [payer.address],
        blockTag: "latest",
      }),
    ).toBe(0n);
    const body = await referencePaymentBody(payer, offerOf(400_000n));
    expect(await post("verify", body)).toMatchObject({ isValid: true });
    const answer = post("settle", body);
    await broadcast(payer.address, body.paymentPayload.payload.authorization.nonce as Hex);
    await admin("devnet_flashblock");
    expect(await answer).toMatchObject({ success: true });
    await seal();
    expect(await balanceOf(payer.address)).toBe(100_000n);
  }, 60_000);
});

describe("one payment, at most one success answer", () => {
  test("ten identical payments through @x402/express at once (one PAYMENT-SIGNATURE header): one paid answer, one transaction, nine refused before any nonce is reserved", async () => {
    const payer = await fundedPayer("ten", 1_000_000n);
    const offer = offerOf(100_000n);
    const resource = await startResourceServer({ facilitatorUrl: server.url, offer });
    servers.push(resource);
    const countBefore = await chain.getTransactionCount({
      address: relayer.address,
      blockTag: "pending",
    });
    const reservedBefore = reserved;

    const unpaid = await fetch(`${resource.url}/paid`);
    expect(unpaid.status).toBe(402);
    const client = new x402HTTPClient(referenceClient(payer, [offer]));
    const required = client.getPaymentRequiredResponse(
      (name) => unpaid.headers.get(name),
      await unpaid.json().catch(() => undefined),
    );
    const headers = client.encodePaymentSignatureHeader(
      await client.createPaymentPayload(required),
    );

    const responses = await withMovingChain(() =>
      Promise.all(Array.from({ length: 10 }, () => fetch(`${resource.url}/paid`, { headers }))),
    );
    const bodies = await Promise.all(responses.map((r) => r.text()));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
    expect(bodies.filter((b) => b === PAID_BODY)).toHaveLength(1);

    await seal();
    expect(await chain.getTransactionCount({ address: relayer.address, blockTag: "latest" })).toBe(
      countBefore + 1,
    );
    expect(await chain.getTransactionCount({ address: relayer.address, blockTag: "pending" })).toBe(
      countBefore + 1,
    );
    expect(reserved - reservedBefore).toBe(1);
    expect(await balanceOf(payer.address)).toBe(900_000n);
  }, 60_000);

  test("ten identical /settle at once: exactly one success; the nine are refused as a used nonce and sign nothing; a later repeat is refused too", async () => {
    const payer = await fundedPayer("ten-settle", 1_000_000n);
    const body = await referencePaymentBody(payer, offerOf(100_000n));
    const countBefore = await chain.getTransactionCount({
      address: relayer.address,
      blockTag: "pending",
    });
    const reservedBefore = reserved;
    const answers = await withMovingChain(() =>
      Promise.all(Array.from({ length: 10 }, () => post("settle", body))),
    );
    const successes = answers.filter((a) => a.success === true);
    expect(successes, JSON.stringify(answers)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.success !== true))
      expect(refused).toMatchObject({
        errorReason: "invalid_exact_evm_nonce_already_used",
        transaction: "",
      });
    expect(reserved - reservedBefore).toBe(1);
    expect(await withMovingChain(() => post("settle", body))).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
    });

    await seal();
    expect(await chain.getTransactionCount({ address: relayer.address, blockTag: "latest" })).toBe(
      countBefore + 1,
    );
    expect(await balanceOf(payer.address)).toBe(900_000n);
    // The next payment takes the next relayer nonce at once: the duplicates left no gap.
    const nextBody = await referencePaymentBody(payer, offerOf(100_000n));
    const next = await withMovingChain(() => post("settle", nextBody));
    expect(next).toMatchObject({ success: true });
    await seal();
    expect(await chain.getTransactionCount({ address: relayer.address, blockTag: "latest" })).toBe(
      countBefore + 2,
    );
  }, 60_000);

  test("a payment-identifier repeat (same id, payload and requirements), at once or later, gets the first outcome again; the same payment without the id is refused", async () => {
    const payer = await fundedPayer("payment-id", 1_000_000n);
    const id = `pay_once_${Date.now()}_0123456789`;
    const body = await referencePaymentBody(payer, offerOf(100_000n));
    body.paymentPayload.extensions = { "payment-identifier": { info: { required: false, id } } };
    // A repeat sent while the first settles waits for its answer; later ones get it from the store.
    const [first, concurrent] = await withMovingChain(() =>
      Promise.all([post("settle", body), post("settle", body)]),
    );
    expect(first).toMatchObject({ success: true });
    expect(concurrent).toEqual(first);
    const repeats = await withMovingChain(() =>
      Promise.all([post("settle", body), post("settle", body)]),
    );
    for (const repeat of repeats) expect(repeat).toEqual(first);
    const withoutId = structuredClone(body);
    delete withoutId.paymentPayload.extensions;
    expect(await withMovingChain(() => post("settle", withoutId))).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
    });
    await seal();
    expect(await balanceOf(payer.address)).toBe(900_000n);
  }, 60_000);
});
