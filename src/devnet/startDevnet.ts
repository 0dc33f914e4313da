import {
  createPublicClient,
  createWalletClient,
  getContractAddress,
  http,
  parseUnits,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { FatalError } from "../errors/base.js";
import { ANVIL_PRIVATE_KEYS, startAnvil } from "./anvil.js";
import { deployTestToken } from "./deployToken.js";
import { deployMiniWallet } from "./deployWallet.js";
import { flashTestTokenAbi } from "./contracts/generated/flashTestToken.js";
import { startFlashblocksFront, type FlashblocksFront } from "./front/flashblocksFront.js";
import type { PendingLogsMode } from "./front/subscriptions.js";

export type DevnetOptions = {
  chainId?: number;
  /** Canonical block cadence (Base: 2,000 ms); 0 mines only on devnet_mine. */
  blockTimeMs?: number;
  /** Flashblock cadence (Base: about 200 ms); 0 only on devnet_flashblock. */
  flashblockIntervalMs?: number;
  host?: string;
  port?: number;
  pendingLogs?: PendingLogsMode;
  onError?: (error: unknown) => void;
  /** Keep the chain on disk (anvil `--state`): dumped every `intervalSeconds` and on SIGTERM, loaded at start. */
  state?: DevnetStateOptions;
};

export type DevnetStateOptions = {
  path: string;
  intervalSeconds: number;
  /** Unix seconds; the same on every start of one chain, so its genesis hash stays the same. */
  genesisTimestamp: number;
  /** Where the restored chain's token already lives: then nothing is deployed. */
  restore?: { token: Address; tokenDeployBlock: number };
};

export type Devnet = {
  httpUrl: string;
  wsUrl: string;
  /** The anvil behind the front, for tests that need to bypass it. */
  anvilUrl: string;
  chainId: number;
  token: Address;
  tokenDeployBlock: number;
  /**
   * A MiniWallet (ERC-1271 smart-contract wallet) holding test USDC, signed for by `privateKeys[WALLET_OWNER_KEY_INDEX]`.
   * Undefined on a restored chain saved before the devnet had one.
   */
  wallet: Address | undefined;
  /** Funded keys (anvil's default mnemonic): [deployer, buyers..., relayers...]. Test only. */
  privateKeys: readonly Hex[];
  front: FlashblocksFront;
  /** The anvil process, for tests that kill it. */
  anvilPid: number | undefined;
  /** The hash of block 0: with the same genesis timestamp, the same on every start of one chain. */
  genesisHash: Hex;
  /**
   * On a restored chain, its head as loaded, before the front made any block: blocks a database
   * indexed above it were made after the chain was last saved, and are no longer the chain's.
   */
  restoredHead: number | undefined;
  stop: () => Promise<void>;
};

/** Accounts 1..5 get test USDC; they play buyers in the demo traffic and the tests. */
const FUNDED_ACCOUNTS = 5;
/** The devnet's MiniWallet is signed for by this key (a buyer's). */
export const WALLET_OWNER_KEY_INDEX = 1;
/** The deployer's nonce for the wallet: after the token (0) and one mint per funded account. */
const WALLET_DEPLOY_NONCE = 1 + FUNDED_ACCOUNTS;

/**
 * Starts a local Base stand-in: anvil (Base's chain id, FIFO ordering, no automine) with the EIP-3009
 * test token deployed and funded, behind the Flashblocks front that sequences blocks and pre-confirmations.
 * The token is the first contract of anvil's first key, so its address is the same on every run.
 */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const chainId = options.chainId ?? 8453;
  const { state } = options;
  const stateArgs =
    state === undefined
      ? []
      : [
          "--state",
          state.path,
          "--state-interval",
          String(state.intervalSeconds),
          "--timestamp",
          String(state.genesisTimestamp),
        ];
  const anvil = await startAnvil({ chainId, extraArgs: ["--order", "fifo", ...stateArgs] });
  try {
    const publicClient = createPublicClient({ transport: http(anvil.httpUrl) });
    const { token, blockNumber } =
      state?.restore === undefined
        ? await deployFundedToken(anvil.httpUrl)
        : { token: state.restore.token, blockNumber: state.restore.tokenDeployBlock };
    if (
      state?.restore !== undefined &&
      ((await publicClient.getCode({ address: token })) ?? "0x") === "0x"
    )
      throw new FatalError(`The restored devnet chain has no token at ${token}`, {
        details: `state file ${state.path}`,
      });
    const wallet =
      state?.restore === undefined
        ? await deployFundedWallet(anvil.httpUrl, token)
        : await restoredWallet(publicClient);
    // From here on the front's sequencer decides when blocks are made (a restored anvil automines again).
    await publicClient.request({ method: "evm_setAutomine", params: [false] } as never);
    const genesis = await publicClient.getBlock({ blockNumber: 0n });
    const restoredHead =
      state?.restore === undefined
        ? undefined
        : Number(await publicClient.getBlockNumber({ cacheTime: 0 }));
    const front = await startFlashblocksFront({
      anvilUrl: anvil.httpUrl,
      flashblockIntervalMs: options.flashblockIntervalMs ?? 200,
      blockTimeMs: options.blockTimeMs ?? 2_000,
      ...(options.host === undefined ? {} : { host: options.host }),
      ...(options.port === undefined ? {} : { port: options.port }),
      ...(options.pendingLogs === undefined ? {} : { pendingLogs: options.pendingLogs }),
      ...(options.onError === undefined ? {} : { onError: options.onError }),
    });
    return {
      httpUrl: front.httpUrl,
      wsUrl: front.wsUrl,
      anvilUrl: anvil.httpUrl,
      chainId,
      token,
      tokenDeployBlock: blockNumber,
      wallet,
      anvilPid: anvil.process.pid,
      genesisHash: genesis.hash,
      restoredHead,
      privateKeys: ANVIL_PRIVATE_KEYS,
      front,
      stop: async () => {
        await front.close();
        await anvil.stop();
      },
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/** Deploys the test token from anvil's first key (nonce 0: always the same address) and funds the buyers. */
async function deployFundedToken(rpcUrl: string): Promise<{ token: Address; blockNumber: number }> {
  const buyers = ANVIL_PRIVATE_KEYS.slice(1, 1 + FUNDED_ACCOUNTS).map(
    (key) => privateKeyToAccount(key).address,
  );
  const { address, blockNumber } = await deployTestToken({
    rpcUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0]!,
    mint: buyers.map((to) => ({ to, amount: parseUnits("1000000000", 6) })),
  });
  return { token: address, blockNumber };
}

/** Deploys the devnet's MiniWallet (owner: key WALLET_OWNER_KEY_INDEX) from the first key and funds it: demo payments come from it. */
async function deployFundedWallet(rpcUrl: string, token: Address): Promise<Address> {
  const owner = privateKeyToAccount(ANVIL_PRIVATE_KEYS[WALLET_OWNER_KEY_INDEX]!).address;
  const wallet = await deployMiniWallet({ rpcUrl, privateKey: ANVIL_PRIVATE_KEYS[0]!, owner });
  const transport = http(rpcUrl);
  const deployer = createWalletClient({
    account: privateKeyToAccount(ANVIL_PRIVATE_KEYS[0]!),
    transport,
  });
  const hash = await deployer.writeContract({
    address: token,
    abi: flashTestTokenAbi,
    functionName: "mint",
    args: [wallet, parseUnits("1000000000", 6)],
    chain: null,
  });
  const receipt = await createPublicClient({ transport }).waitForTransactionReceipt({
    hash,
    pollingInterval: 50,
  });
  if (receipt.status !== "success")
    throw new FatalError("Minting test USDC to the devnet wallet reverted", {
      details: `transaction ${hash}`,
    });
  return wallet;
}

/** The wallet of a restored chain, where deployFundedWallet put it; undefined for a chain saved without one. */
async function restoredWallet(
  publicClient: ReturnType<typeof createPublicClient>,
): Promise<Address | undefined> {
  const address = getContractAddress({
    from: privateKeyToAccount(ANVIL_PRIVATE_KEYS[0]!).address,
    nonce: BigInt(WALLET_DEPLOY_NONCE),
  });
  return ((await publicClient.getCode({ address })) ?? "0x") === "0x" ? undefined : address;
}
