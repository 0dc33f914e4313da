import type { PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import type { Store } from "../../src/store/store.js";
import { startCaptureDevnet } from "../helpers/captureDevnet.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { addSignedTransferOrder } from "../helpers/signedOrder.js";
import { waitFor } from "../helpers/fixtures.js";

let devnet: Devnet;
let client: PublicClient;
let store: Store;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ devnet, client, store, stop } = await startCaptureDevnet({
    blockTimeMs: 300,
    flashblockIntervalMs: 50,
  }));
}, 60_000);

afterAll(() => stop?.());

describe("the capture driver and the relayer's nonces", () => {
  test("a nonce no transaction holds is filled by a 0-value transfer to the relayer, and the capture stuck behind it lands", async () => {
    const rpcClient = createRpcClient(
      testDeps(
        testConfig({
          chainId: devnet.chainId,
          rpc: { http: [devnet.httpUrl] },
          logLevel: "silent",
        }),
      ),
    );
    const relayer = privateKeyToAccount(devnet.privateKeys[8]!);
    const buyer = privateKeyToAccount(devnet.privateKeys[1]!);
    const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
    const order = await addSignedTransferOrder(store, client, devnet, {
      buyer,
      payee,
      value: 42n,
      label: "gap",
    });

    // A nonce reserved (a send the node then refused) while the capture took the next: it goes out
    // one above the gap and cannot be mined.
    const gap = await client.getTransactionCount({ address: relayer.address, blockTag: "pending" });
    const hold = { relayer: relayer.address, nonce: gap, holder: "test:refused" };
    expect(await store.nonces.reserve({ ...hold, floor: gap, owner: "test" }, Date.now())).toBe(
      gap,
    );
    const { logger, lines } = createMemoryLogger("debug");
    const relay = createCaptureRelay({
      client: rpcClient,
      store,
      chainId: devnet.chainId,
      relayer,
      logger,
      replaceAfterMs: 300,
    });
    await relay.capture(order.id);
    expect((await store.captures.get(order.id))?.relayerNonce).toBe(gap + 1);
    // Released once a later nonce was handed out: only the book can tell the gap from a live send.
    expect(await store.nonces.release(hold, Date.now())).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await client.getTransactionCount({ address: relayer.address, blockTag: "latest" })).toBe(
      gap,
    );

    await waitFor(
      async () => {
        await relay.drive(Date.now());
        return client
          .readContract({
            address: devnet.token,
            abi: flashTestTokenAbi,
            functionName: "authorizationState",
            args: [buyer.address, order.nonce],
          })
          .then((used) => used || undefined);
      },
      30_000,
      "the capture behind the gap",
      300,
    );
    expect(
      lines
        .filter((line) => line.msg === "Filled relayer nonce gap")
        .map((line) => line.relayer_nonce),
    ).toEqual([gap]);
    const seen = await relay.waitFor(order.id, { confirmations: 1, timeoutMs: 20_000 });
    const filler = await waitFor(
      async () => {
        const block = await client.getBlock({
          blockNumber: seen.blockNumber,
          includeTransactions: true,
        });
        return (
          block.transactions.find(
            (tx) => tx.from.toLowerCase() === relayer.address.toLowerCase() && tx.nonce === gap,
          ) ?? (await findFiller(relayer.address, gap, seen.blockNumber))
        );
      },
      10_000,
      "the filler transaction",
      100,
    );
    expect(filler.to?.toLowerCase()).toBe(relayer.address.toLowerCase());
    expect(filler.value).toBe(0n);
    expect(await client.getTransactionCount({ address: relayer.address, blockTag: "latest" })).toBe(
      gap + 2,
    );
  }, 90_000);
});

/** The relayer's transaction with `nonce` in the blocks up to `last`. */
async function findFiller(relayer: string, nonce: number, last: bigint) {
  for (let number = last; number >= 0n && number > last - 20n; number--) {
    const block = await client.getBlock({ blockNumber: number, includeTransactions: true });
    const found = block.transactions.find(
      (tx) => tx.from.toLowerCase() === relayer.toLowerCase() && tx.nonce === nonce,
    );
    if (found !== undefined) return found;
  }
  return undefined;
}
