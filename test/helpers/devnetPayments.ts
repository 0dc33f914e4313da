import { createPublicClient, createWalletClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";

/** Sends test-token transfers through the devnet front with explicit nonces (automine is off there). */
export function createPayer(devnet: Devnet, keyIndex = 1) {
  const account = privateKeyToAccount(devnet.privateKeys[keyIndex]!);
  const transport = http(devnet.httpUrl);
  const publicClient = createPublicClient({ transport });
  const wallet = createWalletClient({ account, transport });
  let nonce: number | undefined;
  const rpc = <T>(method: string, params: unknown[] = []) =>
    publicClient.request({ method, params } as never) as Promise<T>;
  return {
    address: account.address,
    rpc,
    publicClient,
    /** Sends `count` transfers in one call (one transaction, `count` Transfer logs). */
    async pay(to: Address, count = 1): Promise<Hex> {
      nonce ??= await publicClient.getTransactionCount({
        address: account.address,
        blockTag: "pending",
      });
      const recipients = Array.from({ length: count }, () => to);
      return wallet.writeContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "emitTransfers",
        args: [recipients, recipients.map((_, i) => BigInt(i + 1))],
        chain: null,
        gas: 1_000_000n,
        nonce: nonce++,
      });
    },
    /** Forgets the local nonce (after a drop or a reorg). */
    resync(): void {
      nonce = undefined;
    },
  };
}

/**
 * A devnet with no block timer and no flashblocks, holding `blocks` mined blocks of one payment
 * transaction each (`transfersPerBlock` Transfer logs): a fixed range to backfill.
 */
export async function startDevnetWithPayments(
  blocks: number,
  transfersPerBlock: number,
): Promise<{ devnet: Devnet; head: number }> {
  const devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0 });
  const payer = createPayer(devnet);
  for (let block = 0; block < blocks; block++) {
    await payer.pay("0x00000000000000000000000000000000000000b1", transfersPerBlock);
    await payer.rpc("devnet_mine");
  }
  return { devnet, head: Number(await payer.rpc<string>("eth_blockNumber")) };
}

/** Polls until `check` returns a value that is not undefined/false, or throws after `timeoutMs`. */
// The generic wait lives with the other shared fixtures; re-exported for the tests that import it from here.
export { waitFor } from "./fixtures.js";
