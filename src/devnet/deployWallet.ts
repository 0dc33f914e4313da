import {
  concat,
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { FatalError } from "../errors/base.js";
import { miniWalletAbi, miniWalletBytecode } from "./contracts/generated/miniWallet.js";
import { quirkyWalletAbi, quirkyWalletBytecode } from "./contracts/generated/quirkyWallet.js";

const RECEIPT_POLL_INTERVAL_MS = 50;

/** EIP-7702's delegation designator prefix: an EOA whose code is 0xef0100 ‖ address runs that address's code. */
export const EIP7702_DELEGATION_PREFIX: Hex = "0xef0100";

/** Deploys a MiniWallet (ERC-1271, `owner` signs) from `privateKey`; the chain must mine. */
export async function deployMiniWallet(options: {
  rpcUrl: string;
  privateKey: Hex;
  owner: Address;
}): Promise<Address> {
  const account = privateKeyToAccount(options.privateKey);
  const transport = http(options.rpcUrl);
  const publicClient = createPublicClient({ transport });
  const hash = await createWalletClient({ account, transport }).deployContract({
    abi: miniWalletAbi,
    bytecode: miniWalletBytecode,
    args: [options.owner],
    chain: null,
  });
  const receipt = await publicClient.waitForTransactionReceipt({
    hash,
    pollingInterval: RECEIPT_POLL_INTERVAL_MS,
  });
  if (receipt.status !== "success" || receipt.contractAddress == null)
    throw new FatalError("MiniWallet deployment failed", { details: `transaction ${hash}` });
  return getAddress(receipt.contractAddress);
}

/**
 * Deploys a QuirkyWallet (a test wallet: `owner` signs with v 27/28 or 0/1 and any s; with `padsWithFf` it
 * answers ERC-1271's magic value padded with 0xff, which FiatToken refuses); the chain must mine.
 */
export async function deployQuirkyWallet(options: {
  rpcUrl: string;
  privateKey: Hex;
  owner: Address;
  padsWithFf: boolean;
}): Promise<Address> {
  const account = privateKeyToAccount(options.privateKey);
  const transport = http(options.rpcUrl);
  const publicClient = createPublicClient({ transport });
  const hash = await createWalletClient({ account, transport }).deployContract({
    abi: quirkyWalletAbi,
    bytecode: quirkyWalletBytecode,
    args: [options.owner, options.padsWithFf],
    chain: null,
  });
  const receipt = await publicClient.waitForTransactionReceipt({
    hash,
    pollingInterval: RECEIPT_POLL_INTERVAL_MS,
  });
  if (receipt.status !== "success" || receipt.contractAddress == null)
    throw new FatalError("QuirkyWallet deployment failed", { details: `transaction ${hash}` });
  return getAddress(receipt.contractAddress);
}

/** The code of an EOA delegated to `implementation` under EIP-7702 (anvil_setCode accepts it as is). */
export function delegationCode(implementation: Address): Hex {
  return concat([EIP7702_DELEGATION_PREFIX, implementation]).toLowerCase() as Hex;
}
