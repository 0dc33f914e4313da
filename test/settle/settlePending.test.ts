import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import type { Facilitator } from "../../src/settle/facilitator.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { sqliteBackend } from "../helpers/backends.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { referencePaymentBody, type ExactOffer } from "../helpers/x402.js";
import { createDevnetFacilitator } from "../helpers/devnetFacilitator.js";
import { httpRpc } from "../helpers/httpRpc.js";

let devnet: Devnet;
let store: Store;
let facilitator: Facilitator;
let offer: ExactOffer;
const metrics = createMetrics({ defaultMetrics: false });

const admin = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);

beforeAll(async () => {
  // No flashblock until the test makes one: a settlement is sent but cannot be pre-confirmed in time.
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  const config = testConfig({
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl] },
    database: await sqliteBackend.freshDatabase(),
    logLevel: "silent",
  });
  store = await openStore(config, { metrics });
  const client = createRpcClient(testDeps(config));
  const relayer = privateKeyToAccount(devnet.privateKeys[9]!);
  const { logger } = createMemoryLogger("debug");
  const domain = await readTokenDomain(
    createPublicClient({ transport: http(devnet.httpUrl) }),
    devnet.token,
  );
  offer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
    amount: 10_000n,
  };
  const relay = createCaptureRelay({ client, store, chainId: devnet.chainId, relayer, logger });
  facilitator = createDevnetFacilitator(
    { client, store, relay, logger },
    devnet,
    domain,
    relayer.address,
    { metrics, settleTimeoutMs: 1_500 },
  );
}, 60_000);

afterAll(async () => {
  await store?.close();
  await devnet?.stop();
});

describe("a /settle whose transaction is not seen within settleTimeoutMs", () => {
  test("answers settlement_pending with the sent hash in transaction; its follow-up once pre-confirmed succeeds with the same hash, once", async () => {
    const body = await referencePaymentBody(privateKeyToAccount(devnet.privateKeys[1]!), offer);
    const pending = await facilitator.settle(body);
    expect(pending.status).toBe(200);
    expect(pending.body).toMatchObject({
      success: false,
      errorReason: "settlement_pending",
      network: `eip155:${devnet.chainId}`,
      payer: body.paymentPayload.payload.authorization.from,
    });
    expect(pending.body.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(pending.body.errorMessage).toContain(pending.body.transaction);
    // The hash is the one the node holds: the payment was sent, once.
    const pool = (await fetch(devnet.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getTransactionByHash",
        params: [pending.body.transaction],
      }),
    }).then((r) => r.json())) as { result: { hash: string } | null };
    expect(pool.result?.hash).toBe(pending.body.transaction);

    await admin("devnet_flashblock");
    const settled = await facilitator.settle(body);
    expect(settled.body).toMatchObject({ success: true, transaction: pending.body.transaction });
    // The outcome is answered once: a later repeat is refused, as the reference refuses a used nonce.
    expect((await facilitator.settle(body)).body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
      transaction: "",
    });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(
      /flashindex_settle_requests_total\{endpoint="settle",outcome="settlement_pending"\} 1/,
    );
    expect(text).toMatch(/flashindex_settle_latency_seconds_count\{outcome="pending"\} 1/);
  }, 60_000);
});
