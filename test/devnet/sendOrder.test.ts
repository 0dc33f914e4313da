import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { beforeEach, expect, test } from "vitest";
import { useManualDevnet } from "../helpers/manualDevnet.js";

const manual = useManualDevnet();
const { call } = manual;

type Receipt = { transactionHash: Hex; transactionIndex: Hex; blockHash: Hex };

beforeEach(async () => {
  await call("devnet_setPendingLag", [0]);
  await call("devnet_mine");
});

/** A self-transfer of nothing from `key`, signed at its next nonce. */
async function selfTransfer(key: Hex): Promise<Hex> {
  const account = privateKeyToAccount(key);
  return account.signTransaction({
    type: "eip1559",
    chainId: manual.devnet.chainId,
    to: account.address,
    value: 0n,
    gas: 21_000n,
    nonce: Number(await call<Hex>("eth_getTransactionCount", [account.address, "pending"])),
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1n,
  });
}

const receipts = (hashes: readonly Hex[]) =>
  Promise.all(hashes.map((hash) => call<Receipt>("eth_getTransactionReceipt", [hash])));
const indexes = (of: readonly Receipt[]) => of.map((r) => Number(r.transactionIndex));

test("transactions sent at once are pre-confirmed in the order their block holds them", async () => {
  for (let round = 0; round < 10; round++) {
    const raws = await Promise.all(manual.devnet.privateKeys.slice(0, 10).map(selfTransfer));
    const hashes = await Promise.all(raws.map((raw) => call<Hex>("eth_sendRawTransaction", [raw])));
    await call("devnet_flashblock");
    const preconfirmed = await receipts(hashes);
    await call("devnet_mine");
    const mined = await receipts(hashes);
    // Pre-confirmed receipts carry a zero block hash; the mined ones their block's.
    expect(preconfirmed.every((r) => BigInt(r.blockHash) === 0n)).toBe(true);
    expect(mined.every((r) => BigInt(r.blockHash) !== 0n)).toBe(true);
    expect(indexes(preconfirmed), `round ${round}`).toEqual(indexes(mined));
  }
}, 60_000);

test("transactions set aside while an older pending block is mined keep their flashblock order", async () => {
  // Sent one by one against the order of their senders' addresses, in the newer pending block.
  const keys = [...manual.devnet.privateKeys.slice(0, 10)].sort((a, b) =>
    privateKeyToAccount(b).address.localeCompare(privateKeyToAccount(a).address),
  );
  await call("devnet_setPendingLag", [1]);
  const older = await call<Hex>("eth_sendRawTransaction", [await selfTransfer(keys[0]!)]);
  await call("devnet_flashblock");
  await call("devnet_mine"); // sealed, not canonical
  const hashes: Hex[] = [];
  for (const key of keys.slice(1))
    hashes.push(await call<Hex>("eth_sendRawTransaction", [await selfTransfer(key)]));
  await call("devnet_flashblock");
  const preconfirmed = await receipts(hashes);
  // The older block is mined: the newer block's transactions wait outside anvil's pool meanwhile.
  await call("devnet_mine");
  expect(BigInt((await receipts([older]))[0]!.blockHash)).not.toBe(0n);
  await call("devnet_setPendingLag", [0]);
  await call("devnet_mine");
  expect(indexes(preconfirmed)).toEqual(indexes(await receipts(hashes)));
}, 60_000);
