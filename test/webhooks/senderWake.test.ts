import { keccak256, stringToHex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { createWebhookSender } from "../../src/webhooks/sender.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { startWebhookReceiver } from "../helpers/webhookReceiver.js";

const SHOP = "0x000000000000000000000000000000000000c0de";
const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});
afterAll(() => stopFileBackends());

async function senderOn(backend: TestBackend, idlePollMs: number) {
  const receiver = await startWebhookReceiver("s3cret");
  const config = testConfig({
    rpc: { http: ["http://127.0.0.1:9"] },
    database: await backend.freshDatabase(),
    webhooks: [{ url: receiver.url, secretEnv: "UNUSED_IN_THIS_TEST", allowPrivateTargets: true }],
  });
  const deps = testDeps(config);
  const store = await openStore(config, { metrics: deps.metrics });
  // Every outbox read the sender makes, counted.
  let reads = 0;
  const webhooks = new Proxy(store.webhooks, {
    get: (target, key) => {
      const value = Reflect.get(target, key) as unknown;
      return typeof value === "function"
        ? (...args: unknown[]) => (
            reads++,
            (value as (...a: unknown[]) => unknown).apply(target, args)
          )
        : value;
    },
  });
  const sender = await createWebhookSender(
    {
      ...deps,
      store: { webhooks, onCommit: store.onCommit } as Pick<Store, "webhooks" | "onCommit">,
      idlePollMs,
    },
    ["s3cret"],
    0,
  );
  const running = sender.run();
  open.push(async () => {
    await deps.shutdown.kill();
    await running;
    await store.close();
    await receiver.close();
  });
  // A void is an order state change: one order.state_changed event.
  const voidOrder = async (n: number) => {
    const added = await store.addOrder(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: SHOP,
        payee: SHOP,
        value: 5n,
        validAfter: 0,
        validBefore: 4_000_000_000,
        nonce: keccak256(stringToHex(`wake ${n}`)),
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      Date.now(),
    );
    await store.voidOrder(added.id, Date.now());
  };
  return { receiver, voidOrder, reads: () => reads };
}

describe.each(BACKENDS)("the webhook sender on $name", (backend) => {
  test("wakes when a write of this process commits: the event goes out with no poll to find it", async () => {
    // An idle poll longer than the test: only the commit can have woken the sender.
    const { receiver, voidOrder } = await senderOn(backend, 600_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (let n = 0; n < 3; n++) await voidOrder(n);
    await waitFor(() => receiver.receipts.length === 3 || undefined, 10_000, "three order events");
    expect(receiver.receipts.map((r) => r.type)).toEqual([
      "order.state_changed",
      "order.state_changed",
      "order.state_changed",
    ]);
  });

  test("reads the outbox a few times a second when idle, not a hundred", async () => {
    const { reads } = await senderOn(backend, 250);
    const before = reads();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // A pass reads once per subscription plus a count, and runs about every 250 ms.
    expect(reads() - before).toBeLessThanOrEqual(20);
  });
});
