import type { Address, Hex } from "viem";
import { describe, expect, test } from "vitest";
import { createCaptureSyncSend, SYNC_SEND } from "../../src/authorization/captureSyncSend.js";
import type { ReceiptPoller } from "../../src/authorization/receiptPoller.js";
import type { RawAnswer, RpcClient } from "../../src/chain/rpcClient.js";
import { createMemoryLogger } from "../helpers/context.js";

const HELD: Address = "0x00000000000000000000000000000000000000a1";
const MOVING: Address = "0x00000000000000000000000000000000000000b2";

/**
 * A node whose sync sends from HELD never answer (a relayer held back: each waits out the node's
 * timeout) and from MOVING answer at once "in the pool" (EIP-7966 code 4). Which relayer a raw
 * transaction is from is read from its first byte here: the stand-in needs no signing.
 */
function heldNode() {
  const sync: Hex[] = [];
  const client = {
    requestRaw: async <T>(
      method: string,
      params: readonly unknown[],
      accept: (answer: RawAnswer) => Promise<T>,
    ): Promise<T> => {
      expect(method).toBe(SYNC_SEND);
      const rawTx = params[0] as Hex;
      sync.push(rawTx);
      if (rawTx.startsWith("0xa1")) return new Promise<T>(() => {});
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        error: { code: 4, message: "added to the mempool but not processed", data: "0x" },
      });
      return accept({ body, id: 1, endpoint: "stub" });
    },
  } as unknown as RpcClient;
  const poller: ReceiptPoller = { next: () => new Promise(() => {}), wake: () => undefined };
  return { client, poller, sync };
}

describe("sync sends on the wire, shared among relayers", () => {
  test("a held relayer takes at most half of them: the others keep sending in one round trip", async () => {
    const { client, poller, sync } = heldNode();
    const plain: Hex[] = [];
    const sender = createCaptureSyncSend(
      {
        client,
        poller,
        plainSend: async (rawTx) => (plain.push(rawTx), "accepted"),
        logger: createMemoryLogger("silent").logger,
      },
      { timeoutMs: 6_000, hedgeAfterMs: 600_000, maxInFlight: 8 },
    );
    // The probe, answered: the endpoint serves the method.
    await sender.send("0xb200", "0x01", MOVING);
    // The held relayer's sends hang; past its half (4) they go plainly.
    for (let i = 0; i < 6; i++) void sender.send(`0xa1${i}0` as Hex, "0x02", HELD);
    await new Promise((resolve) => setImmediate(resolve));
    const moving = await sender.send("0xb201", "0x03", MOVING);

    expect(sync.filter((raw) => raw.startsWith("0xa1"))).toHaveLength(4);
    expect(plain.filter((raw) => raw.startsWith("0xa1"))).toHaveLength(2);
    expect(moving.method).toBe(SYNC_SEND);
  });
});
