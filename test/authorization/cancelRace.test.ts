import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createWalletClient,
  http,
  parseSignature,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Order } from "../../src/store/orderStates.js";
import type { Store } from "../../src/store/store.js";
import { runCli, writeConfig } from "../helpers/cli.js";
import { testConfig } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";
import { addSignedTransferOrder } from "../helpers/signedOrder.js";

const abi = flashTestTokenAbi;
let devnet: Devnet;
let client: PublicClient;
let dir: string;
let configPath: string;
let store: Store;
let relayer: Address;
let gethLike: Server;
let gethLikeConfig: string;

const keys = () => ({ buyer: devnet.privateKeys[1]!, relayer: devnet.privateKeys[6]! });
const buyer = () => privateKeyToAccount(keys().buyer);
const payee = () => privateKeyToAccount(devnet.privateKeys[2]!);
const used = (nonce: Hex, blockTag: "latest" | "pending" = "latest") =>
  client.readContract({
    address: devnet.token,
    abi,
    functionName: "authorizationState",
    args: [buyer().address, nonce],
    blockTag,
  });
const relayerCount = () => client.getTransactionCount({ address: relayer, blockTag: "pending" });
const cancel = (order: Order, config = configPath) =>
  runCli(
    [
      "cancel",
      "--config",
      config,
      "--authorizer",
      order.authorizer,
      "--nonce",
      order.nonce,
      "--confirmations",
      "1",
      "--json",
    ],
    {
      FLASHINDEX_BUYER_KEY: keys().buyer,
      FLASHINDEX_RELAYER_KEY: keys().relayer,
    },
  );
const capture = (order: Order) =>
  runCli(["order", "capture", String(order.id), "--config", configPath, "--json"], {
    FLASHINDEX_RELAYER_KEY: keys().relayer,
  });
const eventsOf = async (nonce: Hex) => ({
  used: (
    await client.getContractEvents({
      address: devnet.token,
      abi,
      eventName: "AuthorizationUsed",
      fromBlock: 0n,
      args: { authorizer: buyer().address, nonce },
    })
  ).length,
  canceled: (
    await client.getContractEvents({
      address: devnet.token,
      abi,
      eventName: "AuthorizationCanceled",
      fromBlock: 0n,
      args: { authorizer: buyer().address, nonce },
    })
  ).length,
});

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 300, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl) });
  relayer = privateKeyToAccount(keys().relayer).address;
  dir = mkdtempSync(join(tmpdir(), "flashindex-cancel-race-"));
  const settings = {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    database: { path: join(dir, "index.db") },
    metrics: { enabled: false },
    cancel: { confirmations: 1, receiptTimeoutMs: 20_000 },
  };
  configPath = writeConfig(dir, settings);
  // anvil answers eth_estimateGas without a block tag at its pending block; geth and reth (Base's
  // node) at "latest" (execution-apis eth_estimateGas: block defaults to latest). This forwarder
  // adds "latest" as they do, so a cancel that only the pending view refuses is not saved by anvil.
  gethLike = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    // void: a rejection here is a bug in the test, and vitest fails the run on an unhandled rejection.
    request.on(
      "end",
      () =>
        void (async () => {
          const call = JSON.parse(body) as
            | { method?: string; params?: unknown[] }
            | Array<{ method?: string; params?: unknown[] }>;
          for (const one of Array.isArray(call) ? call : [call])
            if (one.method === "eth_estimateGas" && one.params?.length === 1)
              one.params.push("latest");
          const answer = await fetch(devnet.httpUrl, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(call),
          });
          response
            .writeHead(answer.status, { "content-type": "application/json" })
            .end(await answer.text());
        })(),
    );
  });
  await new Promise<void>((resolve) => gethLike.listen(0, "127.0.0.1", resolve));
  const port = (gethLike.address() as { port: number }).port;
  gethLikeConfig = writeConfig(
    dir,
    { ...settings, rpc: { ...settings.rpc, http: [`http://127.0.0.1:${port}`] } },
    "geth-like.json",
  );
  store = await openStore(testConfig({ ...settings, logLevel: "silent" }), {
    metrics: createMetrics({ defaultMetrics: false }),
  });
}, 60_000);

afterAll(async () => {
  gethLike?.close();
  await store?.close();
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("flashindex cancel for a stored order", () => {
  test("a cancel racing a capture: one wins, the other is refused without a transaction, and the chain agrees", async () => {
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer: buyer(),
      payee: payee().address,
      value: 21n,
      label: "race",
    });
    const before = await relayerCount();
    const [canceled, captured] = await Promise.all([cancel(order), capture(order)]);
    expect(
      [canceled.code, captured.code].filter((code) => code === 0),
      `cancel: ${canceled.stderr}\ncapture: ${captured.stderr}`,
    ).toHaveLength(1);
    const cancelWon = canceled.code === 0;
    // The loser is refused by the order's state (or the pending view): exit 1 for a capture, 3/5 for a cancel.
    if (cancelWon) expect(captured.code, captured.stderr).toBe(1);
    else expect([3, 5], canceled.stderr).toContain(canceled.code);

    await waitFor(
      async () => ((await used(order.nonce)) ? true : undefined),
      20_000,
      "the winner on chain",
      100,
    );
    expect(await eventsOf(order.nonce)).toEqual(
      cancelWon ? { used: 0, canceled: 1 } : { used: 1, canceled: 0 },
    );
    expect(await relayerCount()).toBe(before + 1);
    const state = (await store.getOrder(order.id))?.state;
    // No daemon indexes here: the order holds the winner's own state until the indexer sees the event.
    expect(state).toBe(cancelWon ? "canceling" : "capturing");
    const transitions = (await store.listTransitions(order.id)).map((t) => t.cause);
    if (!cancelWon) expect(transitions).not.toContain("cancel_accepted");
  }, 120_000);

  test("a cancel for an authorization a capture already pre-confirmed is refused without a transaction; the order goes back with the cause", async () => {
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer: buyer(),
      payee: payee().address,
      value: 22n,
      label: "preconfirmed",
    });
    const before = await relayerCount();
    // Blocks wait while the pending view runs ahead: the payee's own capture is pre-confirmed, not in a block.
    await client.request({ method: "devnet_setPendingLag", params: [1_000] } as never);
    try {
      const { r, s, v } = parseSignature(order.signature);
      const wallet = createWalletClient({ account: payee(), transport: http(devnet.httpUrl) });
      await wallet.writeContract({
        address: devnet.token,
        abi,
        functionName: "transferWithAuthorization",
        chain: null,
        gas: 200_000n,
        args: [
          order.authorizer,
          order.payee,
          BigInt(order.value),
          BigInt(order.validAfter),
          BigInt(order.validBefore),
          order.nonce,
          Number(v),
          r,
          s,
        ],
      });
      await waitFor(
        async () => ((await used(order.nonce, "pending")) ? true : undefined),
        10_000,
        "the capture pre-confirmed",
        50,
      );
      expect(await used(order.nonce, "latest")).toBe(false);

      const result = await cancel(order, gethLikeConfig);
      expect([3, 5], result.stderr).toContain(result.code);
      expect(await relayerCount()).toBe(before);
      const transitions = (await store.listTransitions(order.id)).map(
        (t) => `${t.fromState}>${t.toState}:${t.cause}`,
      );
      expect(transitions.slice(-2)).toEqual([
        "authorized>canceling:cancel_accepted",
        "canceling>authorized:cancel_refused",
      ]);
    } finally {
      await client.request({ method: "devnet_setPendingLag", params: [0] } as never);
    }
  }, 120_000);
});
