import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createTestClient,
  http,
  parseAbiItem,
  toHex,
  type Address,
  type Hex,
} from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { measureSettleLatency, percentile, type SettleLatency } from "./settleLatency.js";
import { startReferenceFacilitator, type ExactOffer } from "./x402Reference.js";

/**
 * Settle latency on one devnet (2 s blocks, 200 ms flashblocks, the Flashblocks front playing a
 * Base node): flashindex's facilitator (the real `flashindex start`, in its own process) with
 * settleWaitsFor "preconfirmed" and then "confirmed", payments sent open loop at
 * BENCH_SETTLE_PER_SECOND (default 20) through its one relayer; then the reference facilitator
 * (x402Facilitator + @x402/evm's exact scheme, viem's 1 s receipt polling as on Base) one settle at
 * a time, since its relayer takes each nonce from the pending count and concurrent settles collide.
 * BENCH_SETTLE_PAYMENTS (default 100) payments for flashindex, BENCH_SETTLE_REFERENCE_PAYMENTS
 * (default 20) for the reference. Prints one JSON array, one object per facilitator run.
 *
 * With the argument `pool` it runs issue 43's row alone instead: "preconfirmed" through
 * BENCH_SETTLE_POOL_RELAYERS (default 4) relayers, BENCH_SETTLE_POOL_PER_SECOND (default 100)
 * offered open loop for BENCH_SETTLE_POOL_SECONDS (default 60), then reads the chain: every
 * settled payment's AuthorizationUsed once, and the relayers' transaction count (a second send of
 * one authorization is a reverted transaction the token never logs). With BENCH_SETTLE_POOL_HOLD=1
 * (or the argument `held` after `pool`) the stand-in holds back the first relayer's transactions
 * for the whole run (devnet_holdSenders: in the node's pool, in no flashblock, as a stuck relayer's
 * on Base); its percentiles are then of the settles the other relayers carried, and after the run
 * the hold is lifted and the chain read once the held transactions have landed.
 *
 * Run: `npx tsx scripts/bench/settleBench.ts` (or the built dist/scripts/bench/settleBench.js).
 */
const PAYMENTS = Number(process.env.BENCH_SETTLE_PAYMENTS ?? 100);
const PER_SECOND = Number(process.env.BENCH_SETTLE_PER_SECOND ?? 20);
const REFERENCE_PAYMENTS = Number(process.env.BENCH_SETTLE_REFERENCE_PAYMENTS ?? 20);
/** The devnet's buyers (test USDC) and a relayer key per facilitator run, none shared. */
const BUYER_KEY_INDEXES = [1, 2, 3, 4, 5];
const RELAYER_KEY_INDEX = { preconfirmed: 7, confirmed: 8, reference: 9 } as const;
/** anvil's mnemonic from this index on: the pool's relayers, funded by anvil_setBalance. */
const POOL_FIRST_MNEMONIC_INDEX = 11;
const DEVNET_MNEMONIC = "test test test test test test test test test test test junk";
const POOL_RELAYERS = Number(process.env.BENCH_SETTLE_POOL_RELAYERS ?? 4);
const POOL_PER_SECOND = Number(process.env.BENCH_SETTLE_POOL_PER_SECOND ?? 100);
const POOL_SECONDS = Number(process.env.BENCH_SETTLE_POOL_SECONDS ?? 60);
const POOL_HOLD = process.env.BENCH_SETTLE_POOL_HOLD === "1" || process.argv[3] === "held";
/** How long the held row waits, once the hold is lifted, for every relayer's transactions to land. */
const POOL_RELEASE_TIMEOUT_MS = 60_000;
/** Settled transactions whose sender is read at once (the held row tells the carriers apart). */
const SENDER_READS_AT_ONCE = 50;
const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const SHOP = "0x000000000000000000000000000000000000c0de";
/** One cent of a 6-decimals token. */
const AMOUNT = 10_000n;
/** How long the daemon gets to start its facilitator. */
const DAEMON_START_TIMEOUT_MS = 60_000;
const MAIN = join(
  import.meta.dirname,
  "..",
  "..",
  "src",
  "cli",
  import.meta.filename.endsWith(".ts") ? "main.ts" : "main.js",
);

export type SettleBenchRow = SettleLatency & {
  facilitator: "flashindex" | "reference";
  settleWaitsFor: "preconfirmed" | "confirmed";
  perSecond: number | undefined;
  /** Relayer keys the facilitator settled from (1 unless the row is the pool's). */
  relayers: number;
  /** The pool row's chain check: AuthorizationUsed logs of its payments, and their relayers' transactions. */
  chain?:
    | {
        authorizationsUsed: number;
        usedTwice: number;
        relayerTransactions: number;
        /** The held row: settled payments whose transaction logged an AuthorizationUsed. */
        settledUsed?: number | undefined;
      }
    | undefined;
  /**
   * The held row: one relayer held back by the stand-in for the run, and the settled payments it
   * carried (answered once the hold was lifted, or as it began). p50Ms, p99Ms and maxMs are then of
   * the other relayers' settles alone.
   */
  held?: { carried: number } | undefined;
};

/** One of the devnet stand-in's admin methods (adminMethods.ts). */
async function devnetAdmin(method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(devnet.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (answer.error !== undefined) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

/** `flashindex start` with the facilitator on, its URL once it listens, and how to stop it. */
async function startDaemon(
  devnet: Devnet,
  dir: string,
  settleWaitsFor: "preconfirmed" | "confirmed",
  poolKeys: readonly Hex[] = [],
): Promise<{ url: string; stop: () => Promise<void> }> {
  const config = join(dir, `${settleWaitsFor}.json`);
  const poolEnv = Object.fromEntries(
    poolKeys.map((key, i) => [`BENCH_POOL_RELAYER_KEY_${i}`, key]),
  );
  const relayers =
    poolKeys.length > 0
      ? { relayers: poolKeys.map((_, i) => ({ keyEnv: `BENCH_POOL_RELAYER_KEY_${i}` })) }
      : {};
  writeFileSync(
    config,
    JSON.stringify({
      chainId: devnet.chainId,
      // The devnet is no provider to spare: the default 50 requests a second caps a settle stream
      // of about ten calls each well below 20 a second.
      rpc: { http: [devnet.httpUrl], ws: devnet.wsUrl, preconfWs: devnet.wsUrl },
      tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
      finality: { depth: 6 },
      database: { path: join(dir, `${settleWaitsFor}.db`) },
      metrics: { enabled: false },
      logLevel: "info",
      facilitator: { enabled: true, port: 0, settleWaitsFor, ...relayers },
    }),
  );
  const daemon: ChildProcess = spawn(
    process.execPath,
    [...(MAIN.endsWith(".ts") ? ["--import", "tsx"] : []), MAIN, "start", "--config", config],
    {
      env: {
        ...process.env,
        FLASHINDEX_RELAYER_KEY: devnet.privateKeys[RELAYER_KEY_INDEX[settleWaitsFor]]!,
        ...poolEnv,
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  daemon.stdout!.on("data", (chunk: Buffer) => (out = (out + chunk.toString()).slice(-100_000)));
  // The daemon's whole log, for a row whose figures want explaining.
  const logTo = process.env.BENCH_SETTLE_DAEMON_LOG;
  if (logTo !== undefined)
    daemon.stdout!.on("data", (chunk: Buffer) => appendFileSync(logTo, chunk));
  const stop = async () => {
    if (daemon.exitCode !== null) return;
    const exited = new Promise((resolve) => daemon.once("exit", resolve));
    daemon.kill("SIGTERM");
    await exited;
  };
  const deadline = Date.now() + DAEMON_START_TIMEOUT_MS;
  for (;;) {
    const url = /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(out)?.[1];
    if (url !== undefined) return { url, stop };
    if (daemon.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(
        `flashindex's facilitator did not start (${settleWaitsFor}):\n${out.slice(-4_000)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

type Payer = ReturnType<typeof privateKeyToAccount>;

/** Issue 30's rows: one relayer, "preconfirmed" then "confirmed", then the reference facilitator. */
async function singleRelayerRows(offer: ExactOffer, payers: readonly Payer[]): Promise<void> {
  for (const settleWaitsFor of ["preconfirmed", "confirmed"] as const) {
    const daemon = await startDaemon(devnet, dir, settleWaitsFor);
    try {
      const figures = await measureSettleLatency({
        facilitatorUrl: daemon.url,
        offer,
        payers,
        payments: PAYMENTS,
        concurrency: PAYMENTS,
        perSecond: PER_SECOND,
      });
      rows.push({
        facilitator: "flashindex",
        settleWaitsFor,
        perSecond: PER_SECOND,
        relayers: 1,
        ...figures,
      });
    } finally {
      await daemon.stop();
    }
  }
  const reference = await startReferenceFacilitator({
    rpcUrl: devnet.httpUrl,
    chainId: devnet.chainId,
    privateKey: devnet.privateKeys[RELAYER_KEY_INDEX.reference]!,
  });
  try {
    const figures = await measureSettleLatency({
      facilitatorUrl: reference.url,
      offer,
      payers,
      payments: REFERENCE_PAYMENTS,
      concurrency: 1,
    });
    // The reference waits for a receipt, which the Flashblocks front answers at pre-confirmation.
    rows.push({
      facilitator: "reference",
      settleWaitsFor: "preconfirmed",
      perSecond: undefined,
      relayers: 1,
      ...figures,
    });
  } finally {
    await reference.close();
  }
}

/** Issue 43's row: the pool of relayers, open loop, then the chain's word on what was sent. */
async function poolRow(offer: ExactOffer, payers: readonly Payer[]): Promise<SettleBenchRow> {
  const accounts = Array.from({ length: POOL_RELAYERS }, (_, i) =>
    mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: POOL_FIRST_MNEMONIC_INDEX + i }),
  );
  const client = createPublicClient({ transport: http(devnet.anvilUrl) });
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.anvilUrl) });
  for (const account of accounts)
    await anvil.setBalance({ address: account.address, value: 10n ** 22n });
  const keys = accounts.map((account) => toHex(account.getHdKey().privateKey!));
  const from = await client.getBlockNumber();
  const payments = POOL_PER_SECOND * POOL_SECONDS;
  // The first relayer of the configuration: an idle pool's ties go to it, so it is sent settles
  // from the first payment on.
  const held = POOL_HOLD ? accounts[0]!.address : undefined;
  const settledTransactions: Array<{ transaction: string; ms: number }> = [];
  const daemon = await startDaemon(devnet, dir, "preconfirmed", keys);
  let figures: SettleLatency;
  try {
    if (held !== undefined) await devnetAdmin("devnet_holdSenders", [[held]]);
    figures = await measureSettleLatency({
      facilitatorUrl: daemon.url,
      offer,
      payers,
      payments,
      concurrency: payments,
      perSecond: POOL_PER_SECOND,
      onSettled: (transaction, ms) => settledTransactions.push({ transaction, ms }),
    });
    if (held !== undefined) {
      await devnetAdmin("devnet_holdSenders", [[]]);
      await relayersLanded(client, accounts);
    }
    // Two canonical blocks: every transaction sent before the last answer is mined by then.
    await new Promise((resolve) => setTimeout(resolve, 4_500));
  } finally {
    await daemon.stop();
  }
  const logs = await client.getLogs({
    address: devnet.token,
    event: AUTHORIZATION_USED,
    fromBlock: from,
    toBlock: "latest",
  });
  const seen = new Map<string, number>();
  for (const log of logs) {
    const key = `${log.args.authorizer}:${log.args.nonce}`.toLowerCase();
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  let relayerTransactions = 0;
  for (const account of accounts)
    relayerTransactions += await client.getTransactionCount({ address: account.address });
  const chain = {
    authorizationsUsed: seen.size,
    usedTwice: [...seen.values()].filter((count) => count > 1).length,
    relayerTransactions,
  };
  const row: SettleBenchRow = {
    facilitator: "flashindex",
    settleWaitsFor: "preconfirmed",
    perSecond: POOL_PER_SECOND,
    relayers: POOL_RELAYERS,
    ...figures,
    chain,
  };
  if (held === undefined) return row;
  // The held row's percentiles are of the settles the other relayers carried.
  const carriedByHeld = new Set<string>();
  for (let i = 0; i < settledTransactions.length; i += SENDER_READS_AT_ONCE)
    await Promise.all(
      settledTransactions.slice(i, i + SENDER_READS_AT_ONCE).map(async ({ transaction }) => {
        const tx = await client.getTransaction({ hash: transaction as Hex });
        if (tx.from.toLowerCase() === held.toLowerCase()) carriedByHeld.add(transaction);
      }),
    );
  const others = settledTransactions
    .filter(({ transaction }) => !carriedByHeld.has(transaction))
    .map(({ ms }) => ms)
    .sort((a, b) => a - b);
  const logged = new Set(logs.map((log) => log.transactionHash.toLowerCase()));
  return {
    ...row,
    p50Ms: percentile(others, 50),
    p99Ms: percentile(others, 99),
    maxMs: others.at(-1) ?? Number.NaN,
    chain: {
      ...chain,
      settledUsed: settledTransactions.filter(({ transaction }) => logged.has(transaction)).length,
    },
    held: { carried: carriedByHeld.size },
  };
}

/**
 * Waits until anvil's pool holds no transaction of the relayers (its pending count, which counts
 * the pool, equals the mined one), or POOL_RELEASE_TIMEOUT_MS.
 */
async function relayersLanded(
  client: ReturnType<typeof createPublicClient>,
  accounts: readonly { address: Address }[],
): Promise<void> {
  const deadline = Date.now() + POOL_RELEASE_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const counts = await Promise.all(
      accounts.map(async ({ address }) => [
        await client.getTransactionCount({ address, blockTag: "latest" }),
        await client.getTransactionCount({ address, blockTag: "pending" }),
      ]),
    );
    if (counts.every(([latest, pending]) => latest === pending)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const devnet = await startDevnet({ blockTimeMs: 2_000, flashblockIntervalMs: 200 });
const dir = mkdtempSync(join(tmpdir(), "flashindex-settle-bench-"));
const rows: SettleBenchRow[] = [];
try {
  const domain = await readTokenDomain(
    createPublicClient({ transport: http(devnet.httpUrl) }),
    devnet.token,
  );
  const offer: ExactOffer = {
    chainId: devnet.chainId,
    token: devnet.token,
    name: domain.name,
    version: domain.version,
    payTo: SHOP,
    amount: AMOUNT,
  };
  const payers = BUYER_KEY_INDEXES.map((index) => privateKeyToAccount(devnet.privateKeys[index]!));
  if (process.argv[2] === "pool") rows.push(await poolRow(offer, payers));
  else await singleRelayerRows(offer, payers);
} finally {
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(rows));
