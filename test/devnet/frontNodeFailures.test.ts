import { numberToHex, pad, type Address, type Hex } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { TRANSFER_TOPIC } from "../../src/authorization/eip3009.js";
import { BROADCAST_CAPACITY_FLASHBLOCKS } from "../../src/devnet/front/subscriptions.js";
import type { RpcLogObject } from "../../src/devnet/front/rpcLogObject.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createPayer } from "../helpers/devnetPayments.js";
import { httpRpc } from "../helpers/httpRpc.js";
import { connectWsRpc, type WsRpcClient } from "../helpers/wsRpcClient.js";

/** The failure modes of real Base nodes the front plays (base/base#4916, #3274, #1439; base/node#963, #1129), as a client sees them. */

const SHOP = pad(numberToHex(0xfa11), { size: 20 }) as Address;
type PendingBlock = { number: Hex; hash: Hex; parentHash: Hex; transactions: unknown[] };
type FlashblockTransaction = {
  hash: Hex;
  from: Hex;
  logs: RpcLogObject[];
  gasUsed: Hex;
  blockNumber: Hex;
};

let devnet: Devnet;
const clients: WsRpcClient[] = [];
beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0 });
});
afterAll(async () => devnet.stop());
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await call("devnet_setFaults", [{}]);
  await call("devnet_stallFlashblockSubscribers", [false]);
  await call("devnet_setSubscriptionKinds", [
    ["newHeads", "logs", "pendingLogs", "newFlashblocks", "newFlashblockTransactions"],
  ]);
  await call("devnet_setPendingLogsMode", [{ shape: "single" }]);
  await call("devnet_setPendingView", ["live"]);
  await call("devnet_setHeadsDelay", [0]);
  await call("devnet_mine");
});

async function post(method: string, params: unknown[] = []): Promise<Response> {
  return fetch(devnet.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
}
const call = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);
async function connect(): Promise<WsRpcClient> {
  const client = await connectWsRpc(devnet.wsUrl);
  clients.push(client);
  return client;
}
const head = async () => Number(await call<Hex>("eth_blockNumber"));

describe("the front plays a Base node's failure modes", () => {
  test("a pendingLogs subscriber that lags more than the broadcast buffer loses the oldest flashblocks without notice", async () => {
    const payer = createPayer(devnet);
    const client = await connect();
    const logs = await client.subscribe("pendingLogs", { address: devnet.token });
    await call("devnet_stallFlashblockSubscribers", [true]);
    const flashblocks = BROADCAST_CAPACITY_FLASHBLOCKS + 3;
    const sent: Hex[] = [];
    for (let i = 0; i < flashblocks; i++) {
      sent.push(await payer.pay(SHOP, 1));
      await call("devnet_flashblock");
    }
    const { lagged } = await call<{ lagged: number }>("devnet_stallFlashblockSubscribers", [false]);
    expect(lagged).toBe(3);
    const received = (await logs.waitFor(
      (r) => r.length >= BROADCAST_CAPACITY_FLASHBLOCKS,
    )) as RpcLogObject[];
    await call("devnet_mine");
    // The three oldest are gone; the canonical block holds them all.
    expect(received.map((l) => l.transactionHash)).toEqual(sent.slice(3));
    const canonical = await call<RpcLogObject[]>("eth_getLogs", [
      { fromBlock: "latest", toBlock: "latest", address: devnet.token },
    ]);
    expect(canonical.map((l) => l.transactionHash)).toEqual(sent);
  });

  test("newFlashblockTransactions sends full transactions with all their logs (filtered or not), hashes, or arrays; a node may not offer pendingLogs", async () => {
    const payer = createPayer(devnet);
    const client = await connect();
    const full = await client.subscribe("newFlashblockTransactions", true);
    const filtered = await client.subscribe("newFlashblockTransactions", {
      address: devnet.token,
      topics: [TRANSFER_TOPIC],
    });
    const unmatched = await client.subscribe("newFlashblockTransactions", { address: SHOP });
    const hashes = await client.subscribe("newFlashblockTransactions");
    const tx = await payer.pay(SHOP, 2);
    await call("devnet_flashblock");
    const [item] = (await filtered.waitFor((r) => r.length >= 1)) as FlashblockTransaction[];
    expect(item).toMatchObject({
      hash: tx,
      from: payer.address.toLowerCase(),
      blockNumber: numberToHex((await head()) + 1),
    });
    expect(item!.logs.map((l) => [l.transactionHash, l.logIndex])).toEqual([
      [tx, "0x0"],
      [tx, "0x1"],
    ]);
    expect(BigInt(item!.gasUsed)).toBeGreaterThan(21_000n);
    expect(await full.waitFor((r) => r.length >= 1)).toEqual([item]);
    expect(await hashes.waitFor((r) => r.length >= 1)).toEqual([tx]);
    expect(unmatched.results).toEqual([]);

    await call("devnet_setPendingLogsMode", [{ shape: "array" }]);
    const [second, third] = [await payer.pay(SHOP, 1), await payer.pay(SHOP, 1)];
    await call("devnet_flashblock");
    const arrays = (await full.waitFor((r) => r.length >= 2)) as unknown[];
    expect((arrays[1] as FlashblockTransaction[]).map((t) => t.hash)).toEqual([second, third]);

    await call("devnet_setSubscriptionKinds", [["newHeads", "logs", "newFlashblockTransactions"]]);
    await expect(client.subscribe("pendingLogs", {})).rejects.toMatchObject({ code: -32602 });
  });

  test("the pending view can freeze or go null while the canonical chain goes on, and come back", async () => {
    const payer = createPayer(devnet);
    await payer.pay(SHOP, 1);
    await call("devnet_flashblock");
    const before = await head();
    expect(
      Number((await call<PendingBlock>("eth_getBlockByNumber", ["pending", false])).number),
    ).toBe(before + 1);

    await call("devnet_setPendingView", ["frozen"]);
    const client = await connect();
    const logs = await client.subscribe("pendingLogs", {});
    for (let i = 0; i < 4; i++) {
      await payer.pay(SHOP, 1);
      await call("devnet_flashblock");
      await call("devnet_mine");
    }
    expect(await head()).toBe(before + 4);
    const frozen = await call<PendingBlock>("eth_getBlockByNumber", ["pending", false]);
    expect(Number(frozen.number)).toBe(before + 1);
    expect(
      (
        await call<RpcLogObject[]>("eth_getLogs", [{ fromBlock: "pending", toBlock: "pending" }])
      ).map((l) => Number(l.blockNumber)),
    ).toEqual([before + 1]);
    expect(logs.results).toEqual([]);

    await call("devnet_setPendingView", ["null"]);
    expect(await call("eth_getBlockByNumber", ["pending", false])).toBeNull();
    expect(await call("eth_getLogs", [{ fromBlock: "pending", toBlock: "pending" }])).toEqual([]);

    await call("devnet_setPendingView", ["live"]);
    const tx = await payer.pay(SHOP, 1);
    await call("devnet_flashblock");
    const live = await call<PendingBlock>("eth_getBlockByNumber", ["pending", false]);
    expect([Number(live.number), live.hash, live.transactions]).toEqual([
      before + 5,
      `0x${"0".repeat(64)}`,
      [tx],
    ]);
    expect(live.parentHash).toBe(
      (await call<PendingBlock>("eth_getBlockByNumber", ["latest", false])).hash,
    );
    await logs.waitFor((r) => r.length >= 1);
  });

  test("with heads delayed, the next block's flashblock reaches a subscriber before the newHeads of its parent", async () => {
    const payer = createPayer(devnet);
    const client = await connect();
    const order: string[] = [];
    const heads = await client.subscribe("newHeads");
    const logs = await client.subscribe("pendingLogs", {});
    await call("devnet_setHeadsDelay", [300]);
    await call("devnet_mine");
    const parent = await head();
    await payer.pay(SHOP, 1);
    await call("devnet_flashblock");
    const [log] = (await logs.waitFor((r) => r.length >= 1)) as RpcLogObject[];
    order.push(`log ${Number(log!.blockNumber)}`, `heads ${heads.results.length}`);
    await heads.waitFor((r) => r.length >= 1);
    expect(order).toEqual([`log ${parent + 1}`, "heads 0"]);
    expect(Number((heads.results[0] as { number: Hex }).number)).toBe(parent);
  });

  test("a rate-limited pending endpoint answers reads of the pending view with 429, with or without Retry-After, and nothing else", async () => {
    await call("devnet_setFaults", [{ pendingRateLimit: { retryAfterSeconds: 2 } }]);
    const limited = await post("eth_getLogs", [{ fromBlock: "pending", toBlock: "pending" }]);
    expect([
      limited.status,
      limited.headers.get("retry-after"),
      ((await limited.json()) as { error: { code: number } }).error.code,
    ]).toEqual([429, "2", -32016]);
    expect((await post("eth_getBlockByNumber", ["pending", false])).status).toBe(429);
    expect((await post("eth_getBlockByNumber", ["latest", false])).status).toBe(200);
    expect((await post("eth_getLogs", [{ fromBlock: "latest", toBlock: "latest" }])).status).toBe(
      200,
    );
    await call("devnet_setFaults", [{ pendingRateLimit: {} }]);
    const bare = await post("eth_getLogs", [{ fromBlock: "pending", toBlock: "pending" }]);
    expect([bare.status, bare.headers.get("retry-after")]).toEqual([429, null]);
    expect(await call("devnet_pendingReads")).toMatchObject({ refused: 3 });
    await expect(
      call("devnet_setFaults", [{ pendingRateLimit: { retryAfterSeconds: -1 } }]),
    ).rejects.toMatchObject({ code: -32602 });
  });
});
