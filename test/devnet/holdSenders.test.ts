import { createWalletClient, http, keccak256, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";

/*
 * The devnet's Base stand-in holds back one sender's transactions on request (devnet_holdSenders):
 * what a stuck relayer looks like on Base, a transaction the mempool took that no flashblock
 * includes (under-priced, or behind a nonce gap). Flashblocks and blocks come when the test asks.
 */

let devnet: Devnet;
type Receipt = { transactionHash: Hex; blockHash: Hex; blockNumber: Hex; status: Hex };
const call = async (method: string, params: unknown[] = []) =>
  (await (
    await fetch(devnet.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    })
  ).json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
const receipt = async (hash: Hex) =>
  (await call("eth_getTransactionReceipt", [hash])).result as Receipt | null;
const ZERO_HASH = `0x${"0".repeat(64)}`;

/** A signed 0-value transfer from anvil's key `index` to itself, at nonce `nonce`. */
async function selfTransfer(index: number, nonce: number): Promise<Hex> {
  const account = privateKeyToAccount(devnet.privateKeys[index]!);
  const wallet = createWalletClient({ account, transport: http(devnet.httpUrl) });
  return wallet.signTransaction({
    to: account.address,
    value: 0n,
    gas: 21_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
    nonce,
    chain: null,
    chainId: devnet.chainId,
  } as never);
}
const latestNonce = async (index: number) =>
  Number(
    (
      await call("eth_getTransactionCount", [
        privateKeyToAccount(devnet.privateKeys[index]!).address,
        "latest",
      ])
    ).result,
  );

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
}, 60_000);
afterAll(async () => devnet?.stop());

describe("devnet_holdSenders", () => {
  test("a held sender's transactions are taken but get no pre-confirmed or canonical receipt while the others' do; released, they land", async () => {
    const heldIndex = 4;
    const held = privateKeyToAccount(devnet.privateKeys[heldIndex]!).address;
    const freeIndex = 5;
    const heldFirst = await latestNonce(heldIndex);
    const freeFirst = await latestNonce(freeIndex);
    expect((await call("devnet_holdSenders", [[held.toLowerCase()]])).result).toEqual([
      held.toLowerCase(),
    ]);

    // Two of the held sender's (one after the other), one of another sender's: all three taken.
    const heldRaw = [
      await selfTransfer(heldIndex, heldFirst),
      await selfTransfer(heldIndex, heldFirst + 1),
    ];
    const freeRaw = await selfTransfer(freeIndex, freeFirst);
    for (const raw of [...heldRaw, freeRaw])
      expect(await call("eth_sendRawTransaction", [raw])).toMatchObject({
        result: keccak256(raw),
      });
    const heldHashes = heldRaw.map((raw) => keccak256(raw));
    const freeHash = keccak256(freeRaw);

    await call("devnet_flashblock");
    expect(await receipt(freeHash)).toMatchObject({ blockHash: ZERO_HASH, status: "0x1" });
    for (const hash of heldHashes) expect(await receipt(hash)).toBeNull();
    // Base's "pending" nonce counts pre-confirmed transactions only, never the mempool.
    expect(Number((await call("eth_getTransactionCount", [held, "pending"])).result)).toBe(
      heldFirst,
    );
    // A sync send of a held sender waits out its timeout, as Base's node does for a transaction it
    // took into the pool but did not process (EIP-7966's error 4, the hash as data).
    const third = await selfTransfer(heldIndex, heldFirst + 2);
    expect(await call("eth_sendRawTransactionSync", [third, 300])).toMatchObject({
      error: { code: 4, data: keccak256(third) },
    });
    heldHashes.push(keccak256(third));

    // Two blocks mined: the other sender's transaction is in the first, the held ones in neither.
    await call("devnet_mine");
    await call("devnet_mine");
    const sealed = await receipt(freeHash);
    expect(sealed?.blockHash).not.toBe(ZERO_HASH);
    expect(sealed?.status).toBe("0x1");
    for (const hash of heldHashes) expect(await receipt(hash)).toBeNull();
    expect(await latestNonce(heldIndex)).toBe(heldFirst);
    // Sent again, the same bytes get the same answer.
    expect(await call("eth_sendRawTransaction", [heldRaw[0]])).toMatchObject({
      result: heldHashes[0],
    });

    // Released: the next flashblock pre-confirms them in nonce order, the next block seals them.
    expect((await call("devnet_holdSenders", [[]])).result).toEqual([]);
    await call("devnet_flashblock");
    for (const hash of heldHashes)
      expect(await receipt(hash)).toMatchObject({ blockHash: ZERO_HASH, status: "0x1" });
    await call("devnet_mine");
    for (const hash of heldHashes) {
      const landed = await receipt(hash);
      expect(landed?.blockHash).not.toBe(ZERO_HASH);
      expect(landed?.status).toBe("0x1");
    }
    expect(await latestNonce(heldIndex)).toBe(heldFirst + 3);

    // Held again, a transaction on a nonce already mined is refused as a node refuses it.
    await call("devnet_holdSenders", [[held]]);
    const answer = await call("eth_sendRawTransaction", [heldRaw[0]]);
    expect(answer.result).toBeUndefined();
    expect(answer.error?.message).toMatch(/nonce/i);
    await call("devnet_holdSenders", [[]]);
  }, 60_000);

  test("refuses what is not a list of addresses, and holds nothing then", async () => {
    const address = privateKeyToAccount(devnet.privateKeys[6]!).address;
    for (const params of [
      [],
      [address],
      [[address.slice(0, 41)]],
      [[`${address}00`]],
      [[42]],
      [{ senders: [address] }],
      [Array.from({ length: 101 }, () => address)],
    ]) {
      const answer = await call("devnet_holdSenders", params);
      expect(answer.error?.code, JSON.stringify(params)).toBe(-32602);
    }
    // Nothing held: a transaction of that sender is pre-confirmed at the next flashblock.
    const raw = await selfTransfer(6, await latestNonce(6));
    await call("eth_sendRawTransaction", [raw]);
    await call("devnet_flashblock");
    expect(await receipt(keccak256(raw))).toMatchObject({ blockHash: ZERO_HASH });
    await call("devnet_mine");
  }, 60_000);
});
