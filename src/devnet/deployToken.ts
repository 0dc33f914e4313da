import { createPublicClient, createWalletClient, getAddress, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { flashTestTokenAbi, flashTestTokenBytecode } from "./contracts/flashTestToken.js";

/** Deploys the EIP-3009 test token (named like Base's USDC by default) and mints the given balances. */
export async function deployTestToken(options: {
  rpcUrl: string;
  privateKey: Hex;
  name?: string;
  mint?: ReadonlyArray<{ to: Address; amount: bigint }>;
}): Promise<{ address: Address; blockNumber: number }> {
  const account = privateKeyToAccount(options.privateKey);
  const transport = http(options.rpcUrl);
  const publicClient = createPublicClient({ transport });
  const wallet = createWalletClient({ account, transport });
  // chain: null skips viem's chain check: the devnet's chain id is whatever anvil was started with.
  const chain = null;
  const hash = await wallet.deployContract({ abi: flashTestTokenAbi, bytecode: flashTestTokenBytecode, args: [options.name ?? "USD Coin"], chain });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  if (receipt.contractAddress === null || receipt.contractAddress === undefined) throw new Error("token deployment failed");
  const address = getAddress(receipt.contractAddress);
  let last: Hex | undefined;
  for (const { to, amount } of options.mint ?? []) {
    last = await wallet.writeContract({ address, abi: flashTestTokenAbi, functionName: "mint", args: [to, amount], chain });
  }
  if (last !== undefined) await publicClient.waitForTransactionReceipt({ hash: last, pollingInterval: 50 });
  return { address, blockNumber: Number(receipt.blockNumber) };
}
