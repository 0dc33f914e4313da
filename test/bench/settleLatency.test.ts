import { createPublicClient, http, parseUnits, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort } from "../../scripts/bench/freePort.js";
import { measureSettleLatency } from "../../scripts/bench/settleLatency.js";
import {
  startReferenceFacilitator,
  type ExactOffer,
  type RunningServer,
} from "../../scripts/bench/x402Reference.js";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";

const CHAIN_ID = 8453;
const SHOP = "0x000000000000000000000000000000000000c0de";
const [funded, broke] = [1, 3].map((index) =>
  privateKeyToAccount(ANVIL_PRIVATE_KEYS[index] as Hex),
);
let anvil: Anvil;
let reference: RunningServer;
let offer: ExactOffer;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: CHAIN_ID });
  const { address: token } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
    mint: [{ to: funded!.address, amount: parseUnits("10", 6) }],
  });
  offer = {
    chainId: CHAIN_ID,
    token,
    name: "USD Coin",
    version: "2",
    payTo: SHOP,
    amount: 10_000n,
  };
  reference = await startReferenceFacilitator({
    rpcUrl: anvil.httpUrl,
    chainId: CHAIN_ID,
    privateKey: ANVIL_PRIVATE_KEYS[2] as Hex,
    receiptPollingMs: 100,
  });
}, 60_000);

afterAll(async () => {
  await reference?.close();
  await anvil?.stop();
});

describe("measureSettleLatency()", () => {
  test("settles each signed payment once through a facilitator URL, times each answer and counts refusals by reason", async () => {
    const figures = await measureSettleLatency({
      facilitatorUrl: reference.url,
      offer,
      payers: [funded!, funded!, broke!],
      payments: 6,
      concurrency: 1,
    });
    expect(figures).toMatchObject({ payments: 6, concurrency: 1, settled: 4, transactions: 4 });
    expect(Object.values(figures.failures)).toEqual([2]);
    expect(figures.p50Ms).toBeGreaterThan(0);
    expect(figures.p50Ms).toBeLessThanOrEqual(figures.p99Ms);
    expect(figures.p99Ms).toBeLessThanOrEqual(figures.maxMs);
    const balance = await createPublicClient({ transport: http(anvil.httpUrl) }).readContract({
      address: offer.token,
      abi: flashTestTokenAbi,
      functionName: "balanceOf",
      args: [SHOP],
    });
    expect(balance).toBe(4n * offer.amount);
  }, 60_000);

  test("counts a settle that gets no answer at all as a failure by its cause, not the run's end", async () => {
    // A free port: nothing listens, so every connection is refused, as a facilitator past its
    // connection limit resets them.
    const figures = await measureSettleLatency({
      facilitatorUrl: `http://127.0.0.1:${await freePort()}`,
      offer,
      payers: [funded!],
      payments: 2,
      concurrency: 2,
    });
    expect(figures).toMatchObject({
      settled: 0,
      transactions: 0,
      failures: { "connection ECONNREFUSED": 2 },
    });
    // Percentiles are the settled payments': none here.
    expect(figures.p50Ms).toBeNaN();
  }, 60_000);
});
