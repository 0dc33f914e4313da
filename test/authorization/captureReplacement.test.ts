import { parseTransaction, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import { CaptureTimeoutError } from "../../src/errors/capture.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import type { Store } from "../../src/store/store.js";
import { startCaptureDevnet } from "../helpers/captureDevnet.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { addSignedTransferOrder } from "../helpers/signedOrder.js";
import { startSyncSendProxy } from "../helpers/syncSendProxy.js";
import { httpRpc } from "../helpers/httpRpc.js";

let devnet: Devnet;
let client: PublicClient;
let store: Store;
let stop: (() => Promise<void>) | undefined;

const admin = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);

beforeAll(async () => {
  // No flashblocks and no blocks until the test makes one: a sent capture stays in the pool, not pre-confirmed.
  ({ devnet, client, store, stop } = await startCaptureDevnet({
    blockTimeMs: 0,
    flashblockIntervalMs: 0,
  }));
}, 60_000);

afterAll(() => stop?.());

/** flashindex's RPC client on `url` (the devnet's front, or a proxy in front of it). */
function clientOf(url: string): RpcClient {
  return createRpcClient(
    testDeps(testConfig({ chainId: devnet.chainId, rpc: { http: [url] }, logLevel: "silent" })),
  );
}

describe("a capture not pre-confirmed within the bound", () => {
  test("is replaced on the same nonce with higher fees once the bound passes; the replacement lands, the authorization is used once, the replaced hash is recorded", async () => {
    const rpcClient = clientOf(devnet.httpUrl);
    const relayer = privateKeyToAccount(devnet.privateKeys[7]!);
    const buyer = privateKeyToAccount(devnet.privateKeys[3]!);
    const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer,
      payee,
      value: 77n,
      label: "replace",
    });
    const balanceOf = (account: `0x${string}`) =>
      client.readContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "balanceOf",
        args: [account],
      });
    const payeeBefore = await balanceOf(payee);
    const { logger, lines } = createMemoryLogger("debug");
    // A capture one nonce above a nonce reserved and never sent cannot execute: it waits in the
    // pool behind the gap, never pre-confirmed, as a stuck one would.
    const gap = await client.getTransactionCount({ address: relayer.address, blockTag: "pending" });
    const hold = { relayer: relayer.address, nonce: gap, holder: "test:refused" };
    expect(await store.nonces.reserve({ ...hold, floor: gap, owner: "test" }, Date.now())).toBe(
      gap,
    );
    const relay = createCaptureRelay({
      client: rpcClient,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      replaceAfterMs: 200,
    });

    const first = await relay.capture(order.id);
    expect(await store.nonces.release(hold, Date.now())).toBe(true);
    const sent = (await store.captures.get(order.id))!;
    expect(sent.relayerNonce).toBe(gap + 1);
    expect(await client.getTransaction({ hash: first.txHash })).toMatchObject({
      nonce: sent.relayerNonce,
    });
    // Before the bound nothing is replaced.
    expect(await relay.drive(Date.now())).toEqual({ resent: 0, replaced: 0 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await relay.drive(Date.now())).toMatchObject({ replaced: 1 });

    const replaced = (await store.captures.get(order.id))!;
    expect(replaced.txHash).not.toBe(first.txHash);
    expect(replaced.replacedTxHashes).toEqual([first.txHash]);
    expect(replaced.relayerNonce).toBe(sent.relayerNonce);
    expect(replaced.maxFeePerGas).toBeGreaterThan(sent.maxFeePerGas);
    expect(replaced.maxPriorityFeePerGas).toBeGreaterThan(sent.maxPriorityFeePerGas);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: "Replaced capture",
        replaced_tx_hash: first.txHash,
        tx_hash: replaced.txHash,
      }),
    );
    // The same pass filled the nonce below it, so the replacement can be pre-confirmed.
    expect(
      lines
        .filter((line) => line.msg === "Filled relayer nonce gap")
        .map((line) => line.relayer_nonce),
    ).toEqual([gap]);

    await admin("devnet_flashblock");
    const preconfirmed = await relay.waitFor(order.id, { confirmations: 0, timeoutMs: 10_000 });
    expect(preconfirmed).toMatchObject({ txHash: replaced.txHash, status: "preconfirmed" });
    await admin("devnet_mine");
    const landed = await relay.waitFor(order.id, { confirmations: 1, timeoutMs: 10_000 });
    expect(landed).toMatchObject({ txHash: replaced.txHash, status: "confirmed" });
    expect(await client.getTransactionReceipt({ hash: first.txHash }).catch(() => null)).toBeNull();

    // Used once: one AuthorizationUsed for the nonce, one transfer to the payee; a later drive sends nothing.
    const used = await client.getContractEvents({
      address: devnet.token,
      abi: flashTestTokenAbi,
      eventName: "AuthorizationUsed",
      fromBlock: 0n,
      args: { authorizer: buyer.address, nonce: order.nonce },
    });
    expect(used.map((log) => log.transactionHash)).toEqual([replaced.txHash]);
    expect((await balanceOf(payee)) - payeeBefore).toBe(77n);
    const count = await client.getTransactionCount({
      address: relayer.address,
      blockTag: "pending",
    });
    expect(await relay.drive(Date.now() + 60_000)).toEqual({ resent: 0, replaced: 0 });
    expect(
      await client.getTransactionCount({ address: relayer.address, blockTag: "pending" }),
    ).toBe(count);
    expect(count).toBe(sent.relayerNonce + 1);
  }, 90_000);

  test("a capture the driver re-sends every pass is still replaced once its first send is older than the bound", async () => {
    const rpcClient = clientOf(devnet.httpUrl);
    const relayer = privateKeyToAccount(devnet.privateKeys[6]!);
    const buyer = privateKeyToAccount(devnet.privateKeys[4]!);
    const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer,
      payee,
      value: 79n,
      label: "resent",
    });
    // Stuck as in the first test: one nonce above a nonce reserved and never sent.
    const gap = await client.getTransactionCount({ address: relayer.address, blockTag: "pending" });
    const hold = { relayer: relayer.address, nonce: gap, holder: "test:refused" };
    await store.nonces.reserve({ ...hold, floor: gap, owner: "test" }, Date.now());
    const relay = createCaptureRelay({
      client: rpcClient,
      store,
      chainId: devnet.chainId,
      relayer,
      logger: createMemoryLogger("silent").logger,
      replaceAfterMs: 1_000,
    });
    const first = await relay.capture(order.id);
    await store.nonces.release(hold, Date.now());
    // Passes in real time, as the daemon's driver runs them: each one re-sends the bytes, which
    // must not restart the bound.
    let replaced = 0;
    const deadline = Date.now() + 5_000;
    while (replaced === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      replaced += (await relay.drive(Date.now())).replaced;
    }
    const after = (await store.captures.get(order.id))!;
    expect(replaced).toBe(1);
    expect(after.replacedTxHashes).toEqual([first.txHash]);
    expect(after.broadcasts).toBeGreaterThan(0);
    expect(after.firstBroadcastAt).not.toBeNull();
  }, 60_000);

  test("a wait that sees no receipt for 2 s asks for it less often than every poller tick", async () => {
    const proxy = await startSyncSendProxy(devnet.httpUrl);
    try {
      const rpcClient = clientOf(proxy.url);
      const relayer = privateKeyToAccount(devnet.privateKeys[8]!);
      const buyer = privateKeyToAccount(devnet.privateKeys[4]!);
      const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
      const order = await addSignedTransferOrder(store, client, devnet, {
        buyer,
        payee,
        value: 80n,
        label: "slow-poll",
      });
      const relay = createCaptureRelay({
        client: rpcClient,
        store,
        chainId: devnet.chainId,
        relayer,
        logger: createMemoryLogger("silent").logger,
        replaceAfterMs: 600_000,
      });
      // No flashblocks on this devnet: the capture is never pre-confirmed.
      await relay.capture(order.id);
      const before = proxy.calls("eth_getTransactionReceipt");
      await expect(
        relay.waitFor(order.id, { confirmations: 0, timeoutMs: 5_000 }),
      ).rejects.toBeInstanceOf(CaptureTimeoutError);
      // At the poller's 50 ms tick, 5 s are about 100 reads (and the drive's one a second);
      // after 2 s unseen the wait asks at most every second: about 40 + 5.
      expect(proxy.calls("eth_getTransactionReceipt") - before).toBeLessThan(70);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  test('a re-send the node answers "already known" counts as a broadcast, so the stuck capture is fee-bumped later', async () => {
    const rpcClient = clientOf(devnet.httpUrl);
    const relayer = privateKeyToAccount(devnet.privateKeys[9]!);
    const buyer = privateKeyToAccount(devnet.privateKeys[4]!);
    const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer,
      payee,
      value: 78n,
      label: "known",
    });
    // Held in the pool behind a reserved nonce, as in the test above: not executable, not pre-confirmed.
    const gap = await client.getTransactionCount({ address: relayer.address, blockTag: "pending" });
    await store.nonces.reserve(
      { relayer: relayer.address, floor: gap, holder: "test:held", owner: "test" },
      Date.now(),
    );
    const { logger, lines } = createMemoryLogger("debug");
    const relay = createCaptureRelay({
      client: rpcClient,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      replaceAfterMs: 60_000,
    });
    await relay.capture(order.id);
    const first = (await store.captures.get(order.id))!;
    expect(first.broadcasts).toBe(1);

    // The driver hands the same bytes to the node again; anvil answers "transaction already imported".
    await relay.drive(Date.now());
    const again = (await store.captures.get(order.id))!;
    expect(again.txHash).toBe(first.txHash);
    expect(again.broadcasts).toBe(2);
    expect(again.lastBroadcastAt).toBeGreaterThanOrEqual(first.lastBroadcastAt!);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "Sent capture", order_id: order.id, node_answer: "known" }),
    );
    expect((await store.nonces.entries(relayer.address, gap + 1))[0]).toMatchObject({
      nonce: gap + 1,
      state: "broadcast",
      txHash: first.txHash,
    });
  }, 60_000);

  test("a capture whose nonce another pending transaction holds is outbid on that nonce, never signed again on a fresh one", async () => {
    const rpcClient = clientOf(devnet.httpUrl);
    const relayer = privateKeyToAccount(devnet.privateKeys[5]!);
    const buyer = privateKeyToAccount(devnet.privateKeys[3]!);
    const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer,
      payee,
      value: 79n,
      label: "outbid",
    });
    const gap = await client.getTransactionCount({ address: relayer.address, blockTag: "pending" });
    await store.nonces.reserve(
      { relayer: relayer.address, floor: gap, holder: "test:held", owner: "test" },
      Date.now(),
    );
    // Note: anvil answers "already imported" for bytes another transaction replaced in its pool; geth
    // and reth answer "replacement transaction underpriced" while a transaction with higher fees holds
    // the nonce. The node here answers as they do once an operator's transaction took the nonce.
    let foreignFee: bigint | undefined;
    const gethLike: RpcClient = {
      ...rpcClient,
      request: (method, params, parse) => {
        if (method === "eth_sendRawTransaction" && foreignFee !== undefined) {
          const tx = parseTransaction(params[0] as Hex);
          if (tx.nonce === gap + 1 && tx.maxFeePerGas! < foreignFee)
            return Promise.reject(new Error("replacement transaction underpriced"));
        }
        return rpcClient.request(method, params, parse);
      },
    };
    const { logger, lines } = createMemoryLogger("debug");
    const relay = createCaptureRelay({
      client: gethLike,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      replaceAfterMs: 60_000,
    });
    await relay.capture(order.id);
    const sent = (await store.captures.get(order.id))!;
    expect(sent.relayerNonce).toBe(gap + 1);

    foreignFee = sent.maxFeePerGas * 4n;
    await relay.drive(Date.now());

    // The first transaction may still be in some node's pool: the authorization is re-signed only on its own nonce.
    const after = (await store.captures.get(order.id))!;
    expect(after.relayerNonce).toBe(sent.relayerNonce);
    expect(after.replacedTxHashes).toEqual([sent.txHash]);
    expect(after.maxFeePerGas).toBeGreaterThan(sent.maxFeePerGas);
    expect(
      (await store.nonces.entries(relayer.address, gap)).map((e) => [e.nonce, e.holder]),
    ).toEqual([
      [gap, "test:held"],
      [gap + 1, `capture:${order.id}`],
    ]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "Failed to drive capture", order_id: order.id }),
    );
  }, 60_000);
});
