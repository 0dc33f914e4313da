import { createWalletClient, http, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createReceiptPoller } from "../../src/authorization/receiptPoller.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { testConfig, testDeps } from "../helpers/context.js";

let devnet: Devnet;
let client: RpcClient;
/** Every call the poller's client sent, by method (a batch's calls one by one). */
const calls: string[] = [];

const admin = (method: string, params: unknown[] = []) =>
  fetch(devnet.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  }).then((r) => r.json());

async function sendSelfTransfer(keyIndex: number): Promise<Hex> {
  const account = privateKeyToAccount(devnet.privateKeys[keyIndex]!);
  return createWalletClient({ account, transport: http(devnet.httpUrl) }).sendTransaction({
    to: account.address,
    value: 0n,
    chain: null,
  });
}

beforeAll(async () => {
  // Flashblocks and blocks only when the test asks: each standing is seen on purpose.
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  const deps = testDeps(testConfig({ chainId: devnet.chainId, rpc: { http: [devnet.httpUrl] } }));
  const real = createRpcClient(deps);
  client = {
    ...real,
    request: (method, params, parse) => (calls.push(method), real.request(method, params, parse)),
    batch: (batch) => (calls.push(...batch.map((c) => c.method)), real.batch(batch)),
  };
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

describe("createReceiptPoller()", () => {
  test("sees a transaction as none, then pre-confirmed, then canonical with its confirmations, then orphaned after a reorg", async () => {
    const poller = createReceiptPoller({ client, pollingIntervalMs: 10 });
    const hash = await sendSelfTransfer(7);
    expect(await poller.next([hash])).toEqual({ kind: "none" });
    await admin("devnet_flashblock");
    const preconfirmed = await poller.next([hash]);
    expect(preconfirmed).toMatchObject({
      kind: "preconfirmed",
      txHash: hash,
      receipt: { preconfirmed: true, status: "success" },
    });
    await admin("devnet_mine");
    const mined = await poller.next([hash]);
    expect(mined).toMatchObject({
      kind: "canonical",
      txHash: hash,
      confirmations: 1,
      receipt: { preconfirmed: false },
    });
    await admin("devnet_mine");
    expect(await poller.next([hash])).toMatchObject({ kind: "canonical", confirmations: 2 });
    // The new branch leaves the transaction out: its old receipt's block is no longer the canonical one.
    await admin("devnet_reorg", [2, []]);
    const after = await poller.next([hash]);
    expect(["orphaned", "none"]).toContain(after.kind);
    if (after.kind === "orphaned")
      expect(after.receipt.blockHash).toBe(
        mined.kind === "canonical" ? mined.receipt.blockHash : undefined,
      );
  }, 60_000);

  test("waiters of one tick share one batch, and each gets the first of its hashes that has a receipt", async () => {
    const poller = createReceiptPoller({ client, pollingIntervalMs: 10 });
    const landed = await sendSelfTransfer(8);
    await admin("devnet_flashblock");
    await admin("devnet_mine");
    const unknown = `0x${"ab".repeat(32)}` as Hex;
    calls.length = 0;
    const standings = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        poller.next(i % 2 === 0 ? [unknown, landed] : [unknown]),
      ),
    );
    expect(standings.filter((s) => s.kind === "canonical" && s.txHash === landed)).toHaveLength(25);
    expect(standings.filter((s) => s.kind === "none")).toHaveLength(25);
    // Two distinct hashes: two receipts, one head, one block; not 75 receipt reads.
    expect(calls.filter((m) => m === "eth_getTransactionReceipt")).toHaveLength(2);
    expect(calls.filter((m) => m === "eth_blockNumber")).toHaveLength(1);
  }, 60_000);

  test("an aborted wait rejects with the signal's reason and leaves the others waiting", async () => {
    const poller = createReceiptPoller({ client, pollingIntervalMs: 50 });
    const controller = new AbortController();
    const aborted = poller.next([`0x${"cd".repeat(32)}`], controller.signal);
    const other = poller.next([`0x${"cd".repeat(32)}`]);
    controller.abort(new Error("gave up"));
    await expect(aborted).rejects.toThrow("gave up");
    expect(await other).toEqual({ kind: "none" });
  });

  test("a wake reads the receipts at once, not at the end of the interval; one during a read makes the next tick read at once", async () => {
    // A node whose receipt reads the test answers by hand: none has a receipt.
    const reads: Array<() => void> = [];
    const slow = {
      batchCalls: () => 100,
      batch: (batch: ReadonlyArray<{ method: string }>) =>
        new Promise((resolve) =>
          reads.push(() => resolve(batch.map(() => ({ ok: true, result: null })))),
        ),
    } as unknown as RpcClient;
    const poller = createReceiptPoller({ client: slow, pollingIntervalMs: 60_000 });
    const hash: Hex = `0x${"ef".repeat(32)}`;
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const first = poller.next([hash]);
    await tick();
    expect(reads).toHaveLength(0);
    poller.wake();
    await tick();
    expect(reads).toHaveLength(1);
    // While that read is out, a second waiter and a wake: the next tick reads at once.
    const second = poller.next([hash]);
    poller.wake();
    reads[0]!();
    expect(await first).toEqual({ kind: "none" });
    await tick();
    expect(reads).toHaveLength(2);
    reads[1]!();
    expect(await second).toEqual({ kind: "none" });
  });
});
