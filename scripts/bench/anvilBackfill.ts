import { spawn } from "node:child_process";
import { join } from "node:path";
import { createPublicClient, createWalletClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_PRIVATE_KEYS, startAnvil } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/flashTestToken.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";

/** End-to-end benchmark: anvil with the test token holding ANVIL_LOGS Transfer logs, backfilled by a fresh process. */
const ANVIL_LOGS = Number(process.env.BENCH_ANVIL_LOGS ?? 50_000);
const TRANSFERS_PER_TX = 500;

const dir = process.argv[2]!;
const anvil = await startAnvil({ chainId: 8453 });
try {
  const key = ANVIL_PRIVATE_KEYS[0] as Hex;
  const account = privateKeyToAccount(key);
  const { address: token, blockNumber: deployBlock } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: key,
    mint: [{ to: account.address, amount: 10n ** 30n }],
  });
  const wallet = createWalletClient({ account, transport: http(anvil.httpUrl) });
  const publicClient = createPublicClient({ transport: http(anvil.httpUrl) });
  let last: Hex | undefined;
  for (let sent = 0; sent < ANVIL_LOGS; sent += TRANSFERS_PER_TX) {
    const to = Array.from({ length: TRANSFERS_PER_TX }, (_, i) => `0x${(sent + i + 1).toString(16).padStart(40, "0")}` as Address);
    last = await wallet.writeContract({ address: token, abi: flashTestTokenAbi, functionName: "emitTransfers", args: [to, to.map(() => 1n)], gas: 25_000_000n } as never);
  }
  if (last !== undefined) await publicClient.waitForTransactionReceipt({ hash: last });
  const config = JSON.stringify({
    chainId: 8453,
    attribution: { enabled: false },
    rpc: { http: [anvil.httpUrl], requestsPerSecond: 10_000, timeoutMs: 120_000 },
    tokens: [{ address: token, startBlock: deployBlock }],
    backfill: { windowBlocks: 1_000, concurrency: 4 },
    finality: { depth: 0 },
    database: { path: join(dir, "anvil.db") },
    metrics: { enabled: false },
    logLevel: "warn",
  });
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, join(import.meta.dirname, "runBackfill.js"), config], { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
    child.on("exit", (code) => (code === 0 ? resolve(text.trim()) : reject(new Error(`runBackfill exited ${code}`))));
  });
  console.log(JSON.stringify({ name: `anvil end to end, ${ANVIL_LOGS.toLocaleString("en-US")} Transfer logs`, figures: JSON.parse(out) as unknown }));
} finally {
  await anvil.stop();
}
