import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { httpRpc } from "../helpers/httpRpc.js";

let devnet: Devnet;
const errors: unknown[] = [];

beforeAll(async () => {
  // Flashblocks and blocks only when the test asks.
  devnet = await startDevnet({
    blockTimeMs: 0,
    flashblockIntervalMs: 0,
    port: 0,
    onError: (error) => errors.push(error),
  });
});
afterAll(async () => {
  await devnet?.stop();
  expect(errors).toEqual([]);
});

const call = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);

type Receipt = { transactionHash: Hex; transactionIndex: Hex; blockHash: Hex };

test("transactions sent at once are pre-confirmed in the order their block holds them", async () => {
  const senders = devnet.privateKeys.slice(0, 10).map((key) => privateKeyToAccount(key));
  for (let round = 0; round < 10; round++) {
    const raws = await Promise.all(
      senders.map(async (account) =>
        account.signTransaction({
          type: "eip1559",
          chainId: devnet.chainId,
          to: account.address,
          value: 0n,
          gas: 21_000n,
          nonce: Number(await call<Hex>("eth_getTransactionCount", [account.address, "pending"])),
          maxFeePerGas: 10_000_000_000n,
          maxPriorityFeePerGas: 1n,
        }),
      ),
    );
    const hashes = await Promise.all(raws.map((raw) => call<Hex>("eth_sendRawTransaction", [raw])));
    await call("devnet_flashblock");
    const preconfirmed = await Promise.all(
      hashes.map((hash) => call<Receipt>("eth_getTransactionReceipt", [hash])),
    );
    await call("devnet_mine");
    const mined = await Promise.all(
      hashes.map((hash) => call<Receipt>("eth_getTransactionReceipt", [hash])),
    );
    // Pre-confirmed receipts carry a zero block hash; the mined ones their block's.
    expect(preconfirmed.every((r) => BigInt(r.blockHash) === 0n)).toBe(true);
    expect(mined.every((r) => BigInt(r.blockHash) !== 0n)).toBe(true);
    expect(
      preconfirmed.map((r) => Number(r.transactionIndex)),
      `round ${round}`,
    ).toEqual(mined.map((r) => Number(r.transactionIndex)));
  }
}, 60_000);
