import { createWalletClient, http, keccak256, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";

/*
 * The devnet's Base stand-in serves eth_sendRawTransactionSync (EIP-7966) as Base's node does
 * (base/base crates/client/flashblocks/src/rpc/eth.rs): the first flashblock's receipt, or the
 * canonical one, within the timeout; and plays the race of base/base#3826 as a fault.
 */

let devnet: Devnet;
const call = async (method: string, params: unknown[] = []) =>
  (await (
    await fetch(devnet.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    })
  ).json()) as {
    result?: { blockHash: Hex; blockNumber: Hex; transactionHash: Hex; status: Hex };
    error?: { code: number; message: string; data?: unknown };
  };

/** A signed 0-value transfer from anvil's key `index` to itself, at its next pending nonce. */
async function selfTransfer(index: number): Promise<Hex> {
  const account = privateKeyToAccount(devnet.privateKeys[index]!);
  const wallet = createWalletClient({ account, transport: http(devnet.httpUrl) });
  const nonce = Number(
    (await call("eth_getTransactionCount", [account.address, "pending"])).result,
  );
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

beforeAll(async () => {
  // Flashblocks only when the test makes them: the race and the timeout are the test's to play.
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
}, 60_000);
afterAll(async () => devnet?.stop());

describe("eth_sendRawTransactionSync on the devnet", () => {
  test("answers with the receipt of the first flashblock that includes the transaction (zero block hash)", async () => {
    const raw = await selfTransfer(3);
    const answer = call("eth_sendRawTransactionSync", [raw]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await call("devnet_flashblock");
    const { result, error } = await answer;
    expect(error).toBeUndefined();
    expect(result).toMatchObject({
      transactionHash: keccak256(raw),
      status: "0x1",
      blockHash: `0x${"0".repeat(64)}`,
    });
    await call("devnet_mine");
  }, 30_000);

  test("past its timeout it answers EIP-7966's error 4 with the hash; an answer of the node (a used nonce) comes at once", async () => {
    const raw = await selfTransfer(4);
    const { error } = await call("eth_sendRawTransactionSync", [raw, 300]);
    expect(error).toMatchObject({
      code: 4,
      data: keccak256(raw),
      message: expect.stringContaining("300ms"),
    });
    await call("devnet_flashblock");
    await call("devnet_mine");
    const again = await call("eth_sendRawTransactionSync", [raw, 300]);
    expect(again.error?.code).not.toBe(4);
    expect(again.result).toBeUndefined();
  }, 30_000);

  test("the race as a fault: the flashblock that included it is missed, only the canonical receipt answers", async () => {
    await call("devnet_setFaults", [{ sendSyncMissesFlashblock: true }]);
    try {
      const raw = await selfTransfer(5);
      const answer = call("eth_sendRawTransactionSync", [raw, 5_000]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await call("devnet_flashblock");
      // Pre-confirmed, as eth_getTransactionReceipt shows, and still no answer until the block.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await call("eth_getTransactionReceipt", [keccak256(raw)])).result?.blockHash).toBe(
        `0x${"0".repeat(64)}`,
      );
      let answered = false;
      void answer.then(() => (answered = true));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(answered).toBe(false);
      await call("devnet_mine");
      const { result } = await answer;
      expect(result?.transactionHash).toBe(keccak256(raw));
      expect(result?.blockHash).not.toBe(`0x${"0".repeat(64)}`);
    } finally {
      await call("devnet_setFaults", [{}]);
    }
  }, 30_000);
});
