import {
  createWalletClient,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  http,
  keccak256,
  numberToHex,
  pad,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { beforeEach, describe, expect, test } from "vitest";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { useManualDevnet } from "../helpers/manualDevnet.js";
import type { RpcAnswerError } from "../helpers/wsRpcClient.js";

/** Explicit gas: automine is off, so nothing may estimate against a block that is not there yet. */
const GAS = 200_000n;
const RECIPIENT = pad(numberToHex(0xca11ed), { size: 20 }) as Address;
/** FlashTestToken keeps balances in a mapping at slot 2 (its `balanceOf` getter reads it). */
const BALANCES_SLOT = 2n;

const manual = useManualDevnet();
const { call } = manual;
beforeEach(async () => {
  await call("devnet_setPendingLag", [0]);
  await call("devnet_mine");
});

const balanceSlot = (owner: Address): Hex =>
  keccak256(
    encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [owner, BALANCES_SLOT]),
  );

async function tokenBalance(owner: Address, tag: string, overrides?: unknown): Promise<bigint> {
  const data = encodeFunctionData({
    abi: flashTestTokenAbi,
    functionName: "balanceOf",
    args: [owner],
  });
  const params: unknown[] = [{ to: manual.devnet.token, data }, tag];
  if (overrides !== undefined) params.push(overrides);
  const result = await call<Hex>("eth_call", params);
  return decodeFunctionResult({ abi: flashTestTokenAbi, functionName: "balanceOf", data: result });
}

/** Estimates a token transfer of `value` from `from`; the node's error when it would revert. */
async function estimateTransfer(from: Address, value: bigint, tag: string) {
  const data = encodeFunctionData({
    abi: flashTestTokenAbi,
    functionName: "transfer",
    args: [RECIPIENT, value],
  });
  return call<Hex>("eth_estimateGas", [{ from, to: manual.devnet.token, data }, tag]).then(
    (gas) => ({ gas: BigInt(gas) }),
    (error: RpcAnswerError) => ({ error: error.code }),
  );
}

/** A funded key sending token transfers through the front, or to anvil directly with `url`. */
function sender(keyIndex: number, url = manual.devnet.httpUrl) {
  const account = privateKeyToAccount(manual.devnet.privateKeys[keyIndex]!);
  const wallet = createWalletClient({ account, transport: http(url) });
  let nonce: number | undefined;
  return {
    address: account.address,
    transfer: async (value: bigint, fees: { maxFeePerGas?: bigint } = {}) => {
      nonce ??= Number(await call<Hex>("eth_getTransactionCount", [account.address, "pending"]));
      return wallet.writeContract({
        address: manual.devnet.token,
        abi: flashTestTokenAbi,
        chain: null,
        gas: GAS,
        functionName: "transfer",
        args: [RECIPIENT, value],
        nonce: nonce++,
        ...fees,
      });
    },
    /** The next transfer reuses the last nonce: it replaces the last one. */
    reuseNonce: () => void (nonce = nonce! - 1),
  };
}

describe('calls and state reads at "pending" run on the pre-confirmed state', () => {
  test("a pre-confirmed transfer of a whole balance empties it at pending only, from its flashblock to its block", async () => {
    const payer = sender(1);
    const whole = await tokenBalance(payer.address, "latest");
    expect(whole).toBeGreaterThan(0n);
    const ether = BigInt(await call<Hex>("eth_getBalance", [payer.address, "latest"]));

    await payer.transfer(whole);
    // In the pool only: a Base node's pending state holds pre-confirmed transactions, no mempool.
    expect(await tokenBalance(payer.address, "pending")).toBe(whole);
    expect(await estimateTransfer(payer.address, 1n, "pending")).toHaveProperty("gas");

    await call("devnet_flashblock");
    expect(await tokenBalance(payer.address, "pending")).toBe(0n);
    expect(await tokenBalance(RECIPIENT, "pending")).toBeGreaterThanOrEqual(whole);
    expect(await tokenBalance(payer.address, "latest")).toBe(whole);
    // The emptied balance is a zeroed slot: the tracer leaves zero words out of its `post`.
    expect(
      await call<Hex>("eth_getStorageAt", [
        manual.devnet.token,
        balanceSlot(payer.address),
        "pending",
      ]),
    ).toBe(`0x${"0".repeat(64)}`);
    expect(
      BigInt(
        await call<Hex>("eth_getStorageAt", [
          manual.devnet.token,
          balanceSlot(payer.address),
          "latest",
        ]),
      ),
    ).toBe(whole);
    expect(await estimateTransfer(payer.address, 1n, "pending")).toEqual({ error: 3 });
    expect(await estimateTransfer(payer.address, 1n, "latest")).toHaveProperty("gas");
    // The sender paid for its gas at pending, not yet at latest; the code is the head's.
    expect(BigInt(await call<Hex>("eth_getBalance", [payer.address, "pending"]))).toBeLessThan(
      ether,
    );
    expect(BigInt(await call<Hex>("eth_getBalance", [payer.address, "latest"]))).toBe(ether);
    expect(await call<Hex>("eth_getCode", [manual.devnet.token, "pending"])).toBe(
      await call<Hex>("eth_getCode", [manual.devnet.token, "latest"]),
    );
    // A caller's own override goes on top of the pending state.
    const slot = {
      [manual.devnet.token]: { stateDiff: { [balanceSlot(payer.address)]: pad("0x05") } },
    };
    expect(await tokenBalance(payer.address, "pending", slot)).toBe(5n);

    await call("devnet_mine");
    expect(await tokenBalance(payer.address, "latest")).toBe(0n);
    expect(await tokenBalance(payer.address, "pending")).toBe(0n);
    expect(await estimateTransfer(payer.address, 1n, "pending")).toEqual({ error: 3 });
  });

  test("a call at pending made once the receipt is out sees the transaction's state", async () => {
    const [payer, busy] = [sender(5), sender(4)];
    const whole = await tokenBalance(payer.address, "latest");
    // Transactions before it in the flashblock: its state takes longer than its receipt.
    for (let i = 0; i < 40; i++) await busy.transfer(1n);
    const hash = await payer.transfer(whole);
    const flashblock = call("devnet_flashblock");
    // The receipt goes out before the pending state is kept; a reader that saw it waits for it.
    let receipt: unknown = null;
    while (receipt === null) receipt = await call("eth_getTransactionReceipt", [hash]);
    expect(await tokenBalance(payer.address, "pending")).toBe(0n);
    await flashblock;
  });

  test("with the canonical chain a block behind, pending holds both pending blocks, then the newer alone", async () => {
    const [alice, bob] = [sender(2), sender(3)];
    const [a, b] = [
      await tokenBalance(alice.address, "latest"),
      await tokenBalance(bob.address, "latest"),
    ];
    await call("devnet_setPendingLag", [1]);
    await alice.transfer(7n);
    await call("devnet_flashblock");
    await call("devnet_mine"); // sealed, not canonical
    await bob.transfer(11n);
    await call("devnet_flashblock");
    expect([
      await tokenBalance(alice.address, "pending"),
      await tokenBalance(bob.address, "pending"),
    ]).toEqual([a - 7n, b - 11n]);

    await call("devnet_mine"); // alice's block becomes canonical; bob's is still pending
    expect(await tokenBalance(alice.address, "latest")).toBe(a - 7n);
    expect(await tokenBalance(bob.address, "latest")).toBe(b);
    expect([
      await tokenBalance(alice.address, "pending"),
      await tokenBalance(bob.address, "pending"),
    ]).toEqual([a - 7n, b - 11n]);

    await call("devnet_setPendingLag", [0]);
    await call("devnet_mine");
    expect(await tokenBalance(bob.address, "latest")).toBe(b - 11n);
    expect(await tokenBalance(bob.address, "pending")).toBe(b - 11n);
  });

  test("a transfer left out of its block (deferred) is back in the pending state once pre-confirmed again", async () => {
    const carol = sender(4);
    const c = await tokenBalance(carol.address, "latest");
    const hash = await carol.transfer(13n);
    await call("devnet_flashblock");
    expect(await call("devnet_deferPreconfirmed", [hash])).toBe(true);
    await call("devnet_mine"); // mined without it; the rebuilt pending block pre-confirms it again
    expect(await tokenBalance(carol.address, "latest")).toBe(c);
    expect(await tokenBalance(carol.address, "pending")).toBe(c - 13n);
    await call("devnet_mine");
    expect(await tokenBalance(carol.address, "latest")).toBe(c - 13n);
    expect(await tokenBalance(carol.address, "pending")).toBe(c - 13n);
  });
});

describe("flashblocks take the pool in arrival order, whichever way a transaction came", () => {
  const preconfirmed = async () =>
    (
      await call<{ transactions: Array<{ hash: Hex }> }>("eth_getBlockByNumber", ["pending", true])
    ).transactions.map((t) => t.hash);

  test("through the front, first in first out; a replacement sent again takes its place", async () => {
    const [alice, bob] = [sender(1), sender(2)];
    const first = await bob.transfer(1n);
    const second = await alice.transfer(2n);
    const third = await bob.transfer(3n);
    bob.reuseNonce();
    const replaced = await bob.transfer(4n, { maxFeePerGas: 50_000_000_000n });
    await call("devnet_flashblock");
    expect(await preconfirmed()).toEqual([first, second, replaced]);
    expect(third).not.toBe(replaced);
  });

  test("one sent to anvil directly is pre-confirmed too, after those that came through the front", async () => {
    const direct = sender(3, manual.devnet.anvilUrl);
    const viaFront = sender(4);
    const around = await direct.transfer(5n);
    const through = await viaFront.transfer(6n);
    await call("devnet_flashblock");
    expect(await preconfirmed()).toEqual([through, around]);
    await call("devnet_mine");
    expect(await tokenBalance(direct.address, "pending")).toBe(
      await tokenBalance(direct.address, "latest"),
    );
  });
});
