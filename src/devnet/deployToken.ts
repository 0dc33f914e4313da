import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { FatalError } from "../errors/base.js";
import { flashTestTokenAbi, flashTestTokenBytecode } from "./contracts/generated/flashTestToken.js";

export type DeployTestTokenOptions = {
  rpcUrl: string;
  privateKey: Hex;
  /** EIP-712 domain name; default "USD Coin", as USDC on Base mainnet. */
  name?: string;
  /** Balances to mint, in base units (6 decimals). */
  mint?: ReadonlyArray<{ to: Address; amount: bigint }>;
};

const RECEIPT_POLL_INTERVAL_MS = 50;

/** Deploys FlashTestToken and mints the given balances; the chain must mine (automine or a block time). */
export async function deployTestToken(
  options: DeployTestTokenOptions,
): Promise<{ address: Address; blockNumber: number }> {
  const account = privateKeyToAccount(options.privateKey);
  const transport = http(options.rpcUrl);
  const publicClient = createPublicClient({ transport });
  const wallet = createWalletClient({ account, transport });
  // chain: null skips viem's chain check: the devnet's chain id is whatever anvil was started with.
  const chain = null;
  const waitForSuccess = async (hash: Hex, what: string) => {
    const receipt = await publicClient.waitForTransactionReceipt({
      hash,
      pollingInterval: RECEIPT_POLL_INTERVAL_MS,
    });
    if (receipt.status !== "success")
      throw new FatalError(`Test token ${what} reverted`, { details: `transaction ${hash}` });
    return receipt;
  };

  const deployHash = await wallet.deployContract({
    abi: flashTestTokenAbi,
    bytecode: flashTestTokenBytecode,
    args: [options.name ?? "USD Coin"],
    chain,
  });
  const receipt = await waitForSuccess(deployHash, "deployment");
  if (receipt.contractAddress == null)
    throw new FatalError("Test token deployment has no contract address", {
      details: `transaction ${deployHash}`,
    });
  const address = getAddress(receipt.contractAddress);

  // Sent one after another (viem takes each nonce from the pending count), confirmed together.
  const mintHashes: Hex[] = [];
  for (const { to, amount } of options.mint ?? []) {
    mintHashes.push(
      await wallet.writeContract({
        address,
        abi: flashTestTokenAbi,
        functionName: "mint",
        args: [to, amount],
        chain,
      }),
    );
  }
  await Promise.all(mintHashes.map((hash) => waitForSuccess(hash, "mint")));
  return { address, blockNumber: Number(receipt.blockNumber) };
}
