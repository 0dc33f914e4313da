import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";

/** Transfer logs per transaction (and per block: anvil mines one transaction a block). */
export const TRANSFERS_PER_TX = 500;
/** A fixed genesis timestamp: block 0 (and so every hash after it) is the same on every load. */
const GENESIS_TIMESTAMP = "1700000000";
const CACHE_DIR = join(import.meta.dirname, "..", "..", "..", ".bench");

export type SavedChain = { anvil: Anvil; token: Address; deployBlock: number; head: number };
type Meta = { token: Address; deployBlock: number; head: number };

/**
 * An anvil serving a chain of `logs` Transfer logs of the test token, identical on every run: the
 * chain is generated once, saved with anvil's own state dump under `.bench/`, and loaded from it
 * afterwards, so runs compare the same blocks and hashes.
 */
export async function startSavedAnvilChain(logs: number): Promise<SavedChain> {
  mkdirSync(CACHE_DIR, { recursive: true });
  const statePath = join(CACHE_DIR, `anvil-${logs}.state.json`);
  const metaPath = join(CACHE_DIR, `anvil-${logs}.meta.json`);
  if (!existsSync(statePath) || !existsSync(metaPath)) await generate(logs, statePath, metaPath);
  const meta = JSON.parse(readFileSync(metaPath, "utf8")) as Meta;
  const anvil = await startAnvil({ chainId: 8453, extraArgs: ["--timestamp", GENESIS_TIMESTAMP, "--load-state", statePath] });
  const head = Number(await createPublicClient({ transport: http(anvil.httpUrl) }).getBlockNumber({ cacheTime: 0 }));
  if (head < meta.head) {
    await anvil.stop();
    throw new Error(`${statePath} loaded to block ${head}, expected ${meta.head}: delete .bench/anvil-${logs}.* to generate it again`);
  }
  return { anvil, ...meta };
}

async function generate(logs: number, statePath: string, metaPath: string): Promise<void> {
  process.stderr.write(`generating an anvil chain of ${logs} Transfer logs (once; saved to ${statePath})\n`);
  // --prune-history: no per-block state snapshots (a 1,000,000-log chain otherwise holds over 12 GB);
  // a long --state-interval: the state is written once, on exit, not every few seconds while sending.
  const anvil = await startAnvil({
    chainId: 8453,
    extraArgs: ["--timestamp", GENESIS_TIMESTAMP, "--dump-state", statePath, "--state-interval", "86400", "--prune-history"],
  });
  try {
    const key = ANVIL_PRIVATE_KEYS[0] as Hex;
    const account = privateKeyToAccount(key);
    const { address: token, blockNumber: deployBlock } = await deployTestToken({ rpcUrl: anvil.httpUrl, privateKey: key, mint: [{ to: account.address, amount: 10n ** 30n }] });
    const transport = http(anvil.httpUrl, { timeout: 120_000 });
    const wallet = createWalletClient({ account, transport });
    const publicClient = createPublicClient({ transport });
    let nonce = await publicClient.getTransactionCount({ address: account.address });
    let last: Hex | undefined;
    for (let sent = 0; sent < logs; sent += TRANSFERS_PER_TX) {
      const to = Array.from({ length: TRANSFERS_PER_TX }, (_, i) => `0x${(sent + i + 1).toString(16).padStart(40, "0")}` as Address);
      last = await wallet.writeContract({ address: token, abi: flashTestTokenAbi, functionName: "emitTransfers", args: [to, to.map(() => 1n)], gas: 25_000_000n, nonce: nonce++, chain: null } as never);
    }
    if (last !== undefined) await publicClient.waitForTransactionReceipt({ hash: last });
    const head = Number(await publicClient.getBlockNumber({ cacheTime: 0 }));
    writeFileSync(metaPath, JSON.stringify({ token, deployBlock, head } satisfies Meta));
    // SIGTERM: anvil writes --dump-state on its way out, which takes a while for a large chain:
    // wait for it rather than let stop()'s grace period cut the file short.
    const exited = new Promise((resolve) => anvil.process.once("exit", resolve));
    anvil.process.kill("SIGTERM");
    await exited;
  } finally {
    await anvil.stop();
  }
}
