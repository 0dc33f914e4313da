import { createPublicClient, http, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { addSignedTransferOrder } from "../helpers/signedOrder.js";

let devnet: Devnet;
let client: PublicClient;
const stores: Store[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 300, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl) });
}, 60_000);

afterAll(async () => {
  for (const store of stores) await store.close();
  await devnet?.stop();
  await stopFileBackends();
});

describe.each(BACKENDS.map((backend, i) => ({ backend, relayerIndex: 8 - i })))(
  "duplicate captures of one payment on $backend.name",
  ({ backend, relayerIndex }) => {
    test("racing each other in two relays leave no nonce gap: one transaction per order, and the next capture is not stuck behind a hole", async () => {
      const rpcClient = createRpcClient(
        testDeps(
          testConfig({
            chainId: devnet.chainId,
            rpc: { http: [devnet.httpUrl] },
            logLevel: "silent",
          }),
        ),
      );
      // Two stores on one database: what two facilitator processes are.
      const config = testConfig({
        chainId: devnet.chainId,
        rpc: { http: [devnet.httpUrl] },
        database: await backend.freshDatabase(),
        logLevel: "silent",
      });
      const [store, second] = [
        await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) }),
        await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) }),
      ];
      stores.push(store!, second!);
      const relayer = privateKeyToAccount(devnet.privateKeys[relayerIndex]!);
      const buyer = privateKeyToAccount(devnet.privateKeys[1]!);
      const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
      const { logger, lines } = createMemoryLogger("debug");
      // Two relays: what two facilitator processes on one database are. Neither is driven: a capture
      // stuck behind a hole in the relayer's nonces would wait for gap filling, which only drive() does.
      const relays = [store!, second!].map((s) =>
        createCaptureRelay({
          client: rpcClient,
          store: s,
          chainId: devnet.chainId,
          relayer,
          logger,
        }),
      );
      const start = await client.getTransactionCount({
        address: relayer.address,
        blockTag: "pending",
      });
      const paid = await addSignedTransferOrder(store!, client, devnet, {
        buyer,
        payee,
        value: 11n,
        label: "dup",
      });
      const other = await addSignedTransferOrder(store!, client, devnet, {
        buyer,
        payee,
        value: 12n,
        label: "dup other",
      });

      // The losers reach the store only after the other order's capture took its nonce: the order in
      // which a busy facilitator interleaves them, made certain (the store's start() is held back).
      let otherStored!: () => void;
      const afterOther = new Promise<void>((resolve) => (otherStored = resolve));
      let firstPaid = true;
      const held = (inner: Store): Store => ({
        ...inner,
        captures: {
          ...inner.captures,
          start: async (orderId, tx, now, owner) => {
            if (orderId === other.id)
              return inner.captures.start(orderId, tx, now, owner).finally(otherStored);
            if (!firstPaid) await afterOther;
            firstPaid = false;
            return inner.captures.start(orderId, tx, now, owner);
          },
        },
      });
      const racing = [store!, second!].map((s) =>
        createCaptureRelay({
          client: rpcClient,
          store: held(s),
          chainId: devnet.chainId,
          relayer,
          logger,
        }),
      );
      const paidAttempts = Array.from({ length: 6 }, (_, i) => racing[i % 2]!.capture(paid.id));
      // The other order's capture starts once every duplicate holds its nonce.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const attempts = await Promise.all([...paidAttempts, racing[1]!.capture(other.id)]);
      const paidHashes = new Set(attempts.slice(0, 6).map((a) => a.txHash));
      expect(paidHashes.size).toBe(1);
      expect(attempts.slice(0, 6).filter((a) => !a.alreadySent)).toHaveLength(1);

      // Both pre-confirmed without a drive: nothing waits on a nonce nobody sends.
      // waitFor throws once the timeout passes without a pre-confirmed (or sealed) receipt.
      for (const order of [paid, other])
        await relays[0]!.waitFor(order.id, { confirmations: 0, timeoutMs: 15_000 });
      expect(
        await client.getTransactionCount({ address: relayer.address, blockTag: "pending" }),
      ).toBe(start + 2);
      const intents = [
        (await store!.captures.get(paid.id))!,
        (await store!.captures.get(other.id))!,
      ];
      expect(intents.map((c) => c.relayerNonce).sort()).toEqual([start, start + 1]);

      // A later capture takes the next nonce, not one past a hole a loser left.
      const later = await addSignedTransferOrder(store!, client, devnet, {
        buyer,
        payee,
        value: 13n,
        label: "dup later",
      });
      await relays[0]!.capture(later.id);
      expect((await store!.captures.get(later.id))?.relayerNonce).toBe(start + 2);
      await relays[1]!.waitFor(later.id, { confirmations: 0, timeoutMs: 15_000 });
      const book = await store!.nonces.entries(relayer.address, start);
      expect(book.filter((e) => e.state === "reserved" || e.state === "released")).toEqual([]);
      expect(lines.filter((line) => line.msg === "Filled relayer nonce gap")).toEqual([]);
    }, 60_000);
  },
);
