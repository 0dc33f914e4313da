import { afterEach, describe, expect, test, vi } from "vitest";
import type { Address } from "viem";
import { FLOOR_FRESH_MS } from "../../src/authorization/relayerNonces.js";
import type { RpcClient } from "../../src/chain/rpcClient.js";
import { testRelayerNonces } from "../helpers/nonceBook.js";

const RELAYER: Address = "0x00000000000000000000000000000000000000aa";
const OTHER: Address = "0x00000000000000000000000000000000000000bb";

/** A node whose pending counts the test sets; it counts the reads. */
function fakeNode() {
  const counts = new Map<string, number>();
  const node = { reads: 0, fail: false, counts };
  const client = {
    request: async (method: string, params: readonly unknown[], parse: (v: unknown) => unknown) => {
      expect(method).toBe("eth_getTransactionCount");
      expect(params[1]).toBe("pending");
      node.reads++;
      if (node.fail) throw new Error("the node is gone");
      return parse(`0x${(counts.get(String(params[0]).toLowerCase()) ?? 0).toString(16)}`);
    },
  } as unknown as RpcClient;
  return { node, client };
}

describe("a capture's floor (recentPendingCount)", () => {
  afterEach(() => void vi.useRealTimers());

  test("one read serves the captures of a relayer for FLOOR_FRESH_MS after it began, then a new one", async () => {
    vi.useFakeTimers({ toFake: ["performance"] });
    const { node, client } = fakeNode();
    const { store, nonces } = await testRelayerNonces(client, 8453);
    node.counts.set(RELAYER.toLowerCase(), 7);
    const [a, b] = await Promise.all([
      nonces.recentPendingCount(RELAYER),
      nonces.recentPendingCount(RELAYER),
    ]);
    expect([a, b, node.reads]).toEqual([7, 7, 1]);
    // Another relayer has a read of its own.
    expect(await nonces.recentPendingCount(OTHER)).toBe(0);
    expect(node.reads).toBe(2);
    node.counts.set(RELAYER.toLowerCase(), 9);
    vi.advanceTimersByTime(FLOOR_FRESH_MS - 1);
    expect(await nonces.recentPendingCount(RELAYER)).toBe(7);
    vi.advanceTimersByTime(1);
    expect(await nonces.recentPendingCount(RELAYER)).toBe(9);
    expect(node.reads).toBe(3);
    await store.close();
  });

  test("a failed read is not shared: the next capture asks again", async () => {
    vi.useFakeTimers({ toFake: ["performance"] });
    const { node, client } = fakeNode();
    const { store, nonces } = await testRelayerNonces(client, 8453);
    node.fail = true;
    await expect(nonces.recentPendingCount(RELAYER)).rejects.toThrow("the node is gone");
    node.fail = false;
    node.counts.set(RELAYER.toLowerCase(), 3);
    expect(await nonces.recentPendingCount(RELAYER)).toBe(3);
    expect(node.reads).toBe(2);
    await store.close();
  });

  test("a floor older than the node's gives the nonce a fresh one gives: the book's own are never free", async () => {
    /** A book whose relayer sent captures on nonces 10 to 14 (the floor read at 10 before each). */
    async function bookWithFiveSent() {
      const { client } = fakeNode();
      const book = await testRelayerNonces(client, 8453);
      for (let i = 0; i < 5; i++) {
        const holder = `capture:${i + 1}`;
        const nonce = await book.nonces.reserve(RELAYER, holder, 10);
        expect(nonce).toBe(10 + i);
        const hash = `0x${(i + 1).toString(16).padStart(64, "0")}` as const;
        await book.nonces.mark(RELAYER, nonce, holder, "broadcast", hash);
      }
      return book;
    }
    // The node has taken 10 to 12 since: a fresh floor is 13, the shared read still says 10.
    const [stale, fresh] = [await bookWithFiveSent(), await bookWithFiveSent()];
    expect(await stale.nonces.reserve(RELAYER, "capture:6", 10)).toBe(15);
    expect(await fresh.nonces.reserve(RELAYER, "capture:6", 13)).toBe(15);
    await Promise.all([stale.store.close(), fresh.store.close()]);
  });
});
