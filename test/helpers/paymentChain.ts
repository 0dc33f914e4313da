import {
  createPublicClient,
  createWalletClient,
  http,
  parseUnits,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_PRIVATE_KEYS, startAnvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import {
  readTokenDomain,
  signCancelAuthorization,
  signTransferAuthorization,
} from "../../src/authorization/eip3009.js";

/**
 * A real anvil chain (chain id 8453) with our EIP-3009 test token and a little payment history:
 * plain transfers, batched transfers, captured and canceled authorizations, spread over blocks.
 */
export async function startPaymentChain() {
  const anvil = await startAnvil({ chainId: 8453 });
  const [, buyer, relayer] = ANVIL_PRIVATE_KEYS.map((key: string) =>
    privateKeyToAccount(key as Hex),
  );
  const publicClient = createPublicClient({ transport: http(anvil.httpUrl) });
  const wallet = (account: typeof buyer) =>
    createWalletClient({ account: account!, transport: http(anvil.httpUrl) });
  const { address: token, blockNumber: deployBlock } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
    mint: [{ to: buyer!.address, amount: parseUnits("1000000", 6) }],
  });
  const send = async (account: typeof buyer, functionName: string, args: readonly unknown[]) => {
    const hash = await wallet(account).writeContract({
      address: token,
      abi: flashTestTokenAbi,
      functionName,
      args,
    } as never);
    await publicClient.waitForTransactionReceipt({ hash });
    return hash;
  };

  /** Adds `rounds` rounds of traffic; each round spans a few blocks and about 10 logs. */
  async function addTraffic(rounds: number): Promise<void> {
    const domain = await readTokenDomain(publicClient, token);
    for (let round = 0; round < rounds; round++) {
      const recipients = [1, 2, 3, 4, 5].map(
        (i) => `0x${(round * 16 + i).toString(16).padStart(40, "0")}` as Address,
      );
      await send(buyer, "emitTransfers", [
        recipients,
        recipients.map((_, i) => BigInt(round * 1000 + i + 1)),
      ]);
      const nonce = `0x${(round * 2 + 1).toString(16).padStart(64, "0")}` as Hex;
      const now = BigInt(Math.floor(Date.now() / 1000));
      const auth = {
        from: buyer!.address,
        to: relayer!.address,
        value: 1_000_000n + BigInt(round),
        validAfter: 0n,
        validBefore: now + 3600n,
        nonce,
      };
      const signed = await signTransferAuthorization(buyer!, domain, auth);
      await send(relayer, "transferWithAuthorization", [
        auth.from,
        auth.to,
        auth.value,
        auth.validAfter,
        auth.validBefore,
        auth.nonce,
        signed.v,
        signed.r,
        signed.s,
      ]);
      const cancelNonce = `0x${(round * 2 + 2).toString(16).padStart(64, "0")}` as Hex;
      const cancel = await signCancelAuthorization(buyer!, domain, {
        authorizer: buyer!.address,
        nonce: cancelNonce,
      });
      await send(relayer, "cancelAuthorization", [
        buyer!.address,
        cancelNonce,
        cancel.v,
        cancel.r,
        cancel.s,
      ]);
    }
  }

  return { anvil, publicClient, token, deployBlock, addTraffic, stop: () => anvil.stop() };
}

export type PaymentChain = Awaited<ReturnType<typeof startPaymentChain>>;
