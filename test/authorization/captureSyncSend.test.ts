import { keccak256, stringToHex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import { CaptureFundsError } from "../../src/errors/capture.js";
import { createMetrics } from "../../src/ops/metrics.js";
import type { Store } from "../../src/store/store.js";
import { startCaptureDevnet } from "../helpers/captureDevnet.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";
import { addSignedTransferOrder } from "../helpers/signedOrder.js";
import { httpRpc } from "../helpers/httpRpc.js";

/*
 * The capture relay's first send by eth_sendRawTransactionSync (captureSyncSend.ts) when the node
 * answers without a receipt: a timeout (EIP-7966 code 4) or a refusal of the bytes. The devnet
 * makes no flashblock and no block until the test does.
 */

let devnet: Devnet;
let client: PublicClient;
let store: Store;
let stop: (() => Promise<void>) | undefined;

const SYNC = "eth_sendRawTransactionSync";

const admin = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);

/** An RPC client on the devnet that counts the calls it makes by method (a batch's calls each). */
function countingClient() {
  const inner = createRpcClient(
    testDeps(
      testConfig({ chainId: devnet.chainId, rpc: { http: [devnet.httpUrl] }, logLevel: "silent" }),
    ),
  );
  const calls = new Map<string, number>();
  const count = (method: string) => calls.set(method, (calls.get(method) ?? 0) + 1);
  const counted: RpcClient = {
    ...inner,
    request: (method, params, parse) => (count(method), inner.request(method, params, parse)),
    requestRaw: (method, params, accept, elsewhere) => (
      count(method),
      inner.requestRaw(method, params, accept, elsewhere)
    ),
    batch: (batch) => (batch.forEach((call) => count(call.method)), inner.batch(batch)),
  };
  return { client: counted, calls: (method: string) => calls.get(method) ?? 0 };
}

beforeAll(async () => {
  ({ devnet, client, store, stop } = await startCaptureDevnet({
    blockTimeMs: 0,
    flashblockIntervalMs: 0,
  }));
}, 60_000);

afterAll(() => stop?.());

describe("a sync send answered without a receipt", () => {
  test("a timeout (EIP-7966 code 4): the transaction is in the pool, recorded as broadcast, and the wait polls for its receipt", async () => {
    const { client: rpc, calls } = countingClient();
    const relayer = privateKeyToAccount(devnet.privateKeys[6]!);
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer: privateKeyToAccount(devnet.privateKeys[3]!),
      payee: privateKeyToAccount(devnet.privateKeys[2]!).address,
      value: 81n,
      label: "sync timeout",
    });
    const metrics = createMetrics({ defaultMetrics: false });
    const { logger } = createMemoryLogger("info");
    const relay = createCaptureRelay({
      client: rpc,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      metrics,
      pollingIntervalMs: 10,
      sendSync: { timeoutMs: 200, hedgeAfterMs: 600_000 },
    });

    // No flashblock comes: the node answers code 4 once the 200 ms are out.
    const sent = await relay.capture(order.id);
    expect(calls(SYNC)).toBe(1);
    expect((await store.captures.get(order.id))!.broadcasts).toBe(1);
    const broadcasts = (await metrics.captureBroadcasts.get()).values;
    expect(broadcasts).toEqual([
      expect.objectContaining({ labels: { kind: "first", method: SYNC }, value: 1 }),
    ]);

    const seen = relay.waitFor(order.id, { confirmations: 0, timeoutMs: 20_000 });
    await waitFor(() => calls("eth_getTransactionReceipt") > 0, 10_000, "a receipt poll", 10);
    await admin("devnet_flashblock");
    expect(await seen).toMatchObject({ txHash: sent.txHash, status: "preconfirmed" });
    await admin("devnet_mine");
  }, 60_000);

  test("a refusal through the sync send keeps its meaning: insufficient funds throws CaptureFundsError, nothing is broadcast, the nonce is given back", async () => {
    const { client: rpc, calls } = countingClient();
    // A relayer without ETH: the simulation and the estimate pass, the node refuses the bytes.
    const relayer = privateKeyToAccount(keccak256(stringToHex(`sync refusal ${Math.random()}`)));
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer: privateKeyToAccount(devnet.privateKeys[3]!),
      payee: privateKeyToAccount(devnet.privateKeys[2]!).address,
      value: 82n,
      label: "sync refusal",
    });
    const { logger, lines } = createMemoryLogger("info");
    const relay = createCaptureRelay({
      client: rpc,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      sendSync: { timeoutMs: 6_000, hedgeAfterMs: 600_000 },
    });

    await expect(relay.capture(order.id)).rejects.toBeInstanceOf(CaptureFundsError);
    expect(calls(SYNC)).toBe(1);
    expect(calls("eth_sendRawTransaction")).toBe(0);
    const capture = (await store.captures.get(order.id))!;
    expect(capture).toMatchObject({ status: "abandoned", broadcasts: 0 });
    expect(await store.getOrder(order.id)).toMatchObject({ state: "authorized" });
    expect(
      (await store.nonces.entries(relayer.address, 0)).filter((e) => e.state !== "released"),
    ).toEqual([]);
    // The node answered the method: it serves it, and the next capture asks it again.
    expect(lines.filter((l) => l.msg === "Probed sync send")).toMatchObject([{ served: true }]);
  }, 60_000);

  test("past the cap of sync sends on the wire a send goes plainly: held sync sends never hold all of the client's requests in flight", async () => {
    const { client: rpc, calls } = countingClient();
    const relayer = privateKeyToAccount(devnet.privateKeys[7]!);
    const orders = [];
    for (const label of ["cap warm", "cap first", "cap second"])
      orders.push(
        await addSignedTransferOrder(store, client, devnet, {
          buyer: privateKeyToAccount(devnet.privateKeys[3]!),
          payee: privateKeyToAccount(devnet.privateKeys[2]!).address,
          value: 83n,
          label,
        }),
      );
    const metrics = createMetrics({ defaultMetrics: false });
    const { logger } = createMemoryLogger("info");
    const relay = createCaptureRelay({
      client: rpc,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      metrics,
      sendSync: { timeoutMs: 300, hedgeAfterMs: 600_000, maxInFlight: 1 },
    });
    // The probe first (answered code 4: no flashblock comes), then two at once.
    await relay.capture(orders[0]!.id);
    await Promise.all([relay.capture(orders[1]!.id), relay.capture(orders[2]!.id)]);

    expect(calls(SYNC)).toBe(2);
    expect(calls("eth_sendRawTransaction")).toBe(1);
    const byMethod = (await metrics.captureBroadcasts.get()).values.map((v) => [
      v.labels.method,
      v.value,
    ]);
    expect(byMethod).toEqual(
      expect.arrayContaining([
        [SYNC, 2],
        ["eth_sendRawTransaction", 1],
      ]),
    );
    await admin("devnet_flashblock");
    await admin("devnet_mine");
  }, 60_000);
});
