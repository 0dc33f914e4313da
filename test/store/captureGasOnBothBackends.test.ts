import type { Address, Hex } from "viem";
import { formatEther } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import type { Config } from "../../src/config/types.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createStatusPage } from "../../src/statusPage/statusPage.js";
import { captureHolder } from "../../src/store/nonceBook.js";
import { openStore } from "../../src/store/openStore.js";
import type { NewOrder } from "../../src/store/orderStates.js";
import type { Store } from "../../src/store/store.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Address = "0x00000000000000000000000000000000000a11ce";
const SHOP: Address = "0x0000000000000000000000000000000000005409";
const CAFE: Address = "0x000000000000000000000000000000000000caFE";
const RELAYER: Address = "0x000000000000000000000000000000000000beef";
const word = (hex: string) => `0x${hex.replace(/^0x/, "").padStart(64, "0")}` as Hex;
const NOW = 1_700_000_000_000;
const GWEI = 1_000_000_000n;

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

async function freshStore(database: Record<string, unknown>): Promise<{
  store: Store;
  config: Config;
}> {
  const config = testConfig({ rpc: { http: ["http://127.0.0.1:9"] }, database });
  const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  open.push(store);
  return { store, config };
}

/** An order to `payee`, captured with relayer nonce `n`; its gas recorded when `gas` is given. */
async function capture(
  store: Store,
  n: number,
  payee: Address,
  gas?: { gasUsed: bigint; effectiveGasPrice: bigint | null },
): Promise<number> {
  const order: NewOrder = {
    chainId: 8453,
    token: TOKEN,
    authorizer: ALICE,
    payee,
    value: 1_000_000n,
    validAfter: 0,
    validBefore: NOW / 1000 + 3600,
    nonce: word(`a${n}`),
    kind: "transfer",
    signature: `0x${"11".repeat(65)}`,
    source: "x402",
  };
  const added = await store.addOrder(order, NOW);
  const holder = captureHolder(added.id);
  await store.nonces.reserve({ relayer: RELAYER, floor: n, holder, owner: "test" }, NOW);
  const txHash = word(`b${n}`);
  await store.captures.start(
    added.id,
    {
      relayer: RELAYER,
      relayerNonce: n,
      txHash,
      rawTx: `0x02${String(n).padStart(8, "0")}`,
      maxFeePerGas: 2n * GWEI,
      maxPriorityFeePerGas: 1_000_000n,
    },
    NOW + 1,
    "test",
  );
  if (gas !== undefined) await store.captures.recordGas(added.id, txHash, gas, NOW + 2);
  return added.id;
}

// Beyond 2^64 wei per gas: gas × price overflows SQLite's INTEGER, so the sums must be bigint.
const HUGE_PRICE = 2n ** 70n;

async function seed(store: Store): Promise<number[]> {
  return [
    await capture(store, 0, SHOP, { gasUsed: 60_000n, effectiveGasPrice: GWEI }),
    await capture(store, 1, CAFE, { gasUsed: 50_000n, effectiveGasPrice: HUGE_PRICE }),
    await capture(store, 2, SHOP, { gasUsed: 61_000n, effectiveGasPrice: 2n * GWEI }),
    // No gas yet (receipt not judged paid): not counted.
    await capture(store, 3, SHOP),
    // A receipt without effectiveGasPrice: counts for gas, not for cost.
    await capture(store, 4, SHOP, { gasUsed: 62_001n, effectiveGasPrice: null }),
  ];
}

describe.each(BACKENDS)("gas per payment through the store on $name", (backend) => {
  test("recentGas() returns the latest captures with gas, newest first, with their payee, exact beyond 64 bits", async () => {
    const { store } = await freshStore(await backend.freshDatabase());
    const ids = await seed(store);
    expect(await store.captures.recentGas(10)).toEqual([
      { orderId: ids[4], payee: SHOP, gasUsed: 62_001n, effectiveGasPrice: null },
      { orderId: ids[2], payee: SHOP, gasUsed: 61_000n, effectiveGasPrice: 2n * GWEI },
      {
        orderId: ids[1],
        payee: CAFE.toLowerCase(),
        gasUsed: 50_000n,
        effectiveGasPrice: HUGE_PRICE,
      },
      { orderId: ids[0], payee: SHOP, gasUsed: 60_000n, effectiveGasPrice: GWEI },
    ]);
    expect((await store.captures.recentGas(2)).map((row) => row.orderId)).toEqual([ids[4], ids[2]]);
  }, 60_000);

  test("the status page shows the count, average gas and average cost per payment, overall and per payee", async () => {
    const { store, config } = await freshStore(await backend.freshDatabase());
    await seed(store);
    const html = await createStatusPage({
      config,
      metrics: createMetrics({ defaultMetrics: false }),
      store,
    })();
    const section = /<section id="capture-gas">([\s\S]*?)<\/section>/.exec(html)?.[1];
    expect(section).toBeDefined();
    const overallCost = (60_000n * GWEI + 50_000n * HUGE_PRICE + 61_000n * 2n * GWEI) / 3n;
    expect(section).toContain("<dt>Captures</dt><dd>4</dd>");
    // (60000 + 50000 + 61000 + 62001) / 4, floored.
    expect(section).toContain("<dt>Average gas used</dt><dd>58250</dd>");
    expect(section).toContain(`<dt>Average cost</dt><dd>${formatEther(overallCost)} ETH</dd>`);
    expect(section).toContain("<dt>Captures with a gas price</dt><dd>3</dd>");
    // SHOP: 3 captures, (60000 + 61000 + 62001) / 3 = 61000 gas; cost over its 2 priced ones.
    const shopCost = formatEther((60_000n * GWEI + 61_000n * 2n * GWEI) / 2n);
    expect(section).toContain(`<td>${SHOP}</td><td>3</td><td>61000</td><td>${shopCost} ETH</td>`);
    const cafeCost = formatEther(50_000n * HUGE_PRICE);
    expect(section).toContain(
      `<td>${CAFE.toLowerCase()}</td><td>1</td><td>50000</td><td>${cafeCost} ETH</td>`,
    );
    expect(section!.indexOf(SHOP)).toBeLessThan(section!.indexOf(CAFE.toLowerCase()));
  }, 60_000);

  test("the status page says so before any capture has gas", async () => {
    const { store, config } = await freshStore(await backend.freshDatabase());
    await capture(store, 0, SHOP);
    const html = await createStatusPage({
      config,
      metrics: createMetrics({ defaultMetrics: false }),
      store,
    })();
    expect(html).toContain("<dt>Captures</dt><dd>0</dd>");
    expect(html).toContain("<dt>Average cost</dt><dd>–</dd>");
    expect(html).toContain("No capture with recorded gas yet.");
  }, 60_000);
});
