import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { spawnCli, writeConfig } from "./cli.js";
import { waitFor } from "./fixtures.js";
import type { ExactOffer } from "./x402.js";

/** Longest wait for a /settle answer or a daemon's exit: fails with a reason, not a timeout. */
export const STEP_TIMEOUT_MS = 30_000;

export type Daemon = ReturnType<typeof spawnCli>;

export interface SettleCrashHarnessOptions {
  /** Prefix of the temporary directory holding the config and the database. */
  dirPrefix: string;
  /** Relayer keys: env variable → devnet key index, e.g. `{ FLASHINDEX_RELAYER_KEY: 6 }`. */
  relayerKeys: Record<string, number>;
  /** 0: no pre-confirmations, receipts only sealed. */
  flashblockIntervalMs?: number;
  finalityDepth?: number;
  /** Merged into the config's `facilitator` section (e.g. a relayer pool). */
  facilitator?: Record<string, unknown>;
}

/** A devnet, a daemon config on a fresh SQLite file, and the tools a kill -9 settle test needs. */
export interface SettleCrashHarness {
  devnet: Devnet;
  client: PublicClient;
  offer: ExactOffer;
  relayers: Address[];
  /** Starts the daemon (its facilitator on a new port); returns it with the facilitator's URL. */
  startDaemon(env?: NodeJS.ProcessEnv): Promise<{ daemon: Daemon; url: string }>;
  /** Resolves when `daemon` has exited; rejects with `what` and its output after `ms`. */
  exitOf(daemon: Daemon, ms: number, what?: string): Promise<void>;
  /** Ends `daemon` (`signal`, SIGKILL if it lingers) so no daemon of a failed case outlives it. */
  stop(daemon: Daemon, signal?: NodeJS.Signals): Promise<void>;
  /** POSTs `body` to the facilitator's /settle; throws when no answer comes. */
  settle(url: string, body: unknown): Promise<Record<string, unknown>>;
  /** The database as a reader sees it (the daemon holds it for writing). */
  query<T>(sql: string, ...params: unknown[]): T[];
  /** Transactions from a relayer to the token with `nonce` in their calldata, in every block. */
  relayedCarrying(nonce: Hex): Promise<Hex[]>;
  /** Whether the token has marked `from`'s authorization `nonce` used. */
  used(from: Address, nonce: Hex): Promise<boolean>;
  /** Kills every daemon still running, stops the devnet, removes the directory. */
  tearDown(): Promise<void>;
}

/** The daemon's last output, for a failure's message. */
export function tail(daemon: Daemon): string {
  const { stdout, stderr } = daemon.output();
  return `stdout:\n${stdout.slice(-4_000)}\nstderr:\n${stderr.slice(-2_000)}`;
}

/** Starts a devnet and writes a facilitator config for it; see SettleCrashHarness. */
export async function createSettleCrashHarness(
  options: SettleCrashHarnessOptions,
): Promise<SettleCrashHarness> {
  const devnet = await startDevnet({
    blockTimeMs: 400,
    flashblockIntervalMs: options.flashblockIntervalMs ?? 50,
    port: 0,
  });
  const daemons: Daemon[] = [];
  let dir: string | undefined;
  const tearDown = async (): Promise<void> => {
    for (const daemon of daemons.splice(0))
      if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill("SIGKILL");
    await devnet.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  };
  try {
    // No cache: viem keeps getBlockNumber's answer for 4 s by default, and a head that old (ten
    // 400 ms blocks) hides the transactions relayedCarrying looks for.
    const client = createPublicClient({ transport: http(devnet.httpUrl), cacheTime: 0 });
    const relayerEnv = Object.fromEntries(
      Object.entries(options.relayerKeys).map(([name, i]) => [name, devnet.privateKeys[i]!]),
    );
    const relayers = Object.values(options.relayerKeys).map(
      (i) => privateKeyToAccount(devnet.privateKeys[i]!).address,
    );
    const firstBlock = await client.getBlockNumber();
    const domain = await readTokenDomain(client, devnet.token);
    const offer: ExactOffer = {
      chainId: devnet.chainId,
      token: devnet.token,
      name: domain.name,
      version: domain.version,
      payTo: privateKeyToAccount(devnet.privateKeys[2]!).address,
      amount: 3_000n,
    };
    dir = mkdtempSync(join(tmpdir(), options.dirPrefix));
    const dbPath = join(dir, "index.db");
    const configPath = writeConfig(dir, {
      chainId: devnet.chainId,
      rpc: {
        http: [devnet.httpUrl],
        retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 },
      },
      tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
      finality: { depth: options.finalityDepth ?? 0 },
      realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
      database: { path: dbPath },
      metrics: { enabled: false },
      facilitator: {
        enabled: true,
        port: 0,
        settleWaitsFor: "preconfirmed",
        ...options.facilitator,
      },
    });

    const startDaemon = async (env: NodeJS.ProcessEnv = {}) => {
      const daemon = spawnCli(["start", "--config", configPath], { ...relayerEnv, ...env });
      daemons.push(daemon);
      const url = await waitFor(
        () => /"msg":"Started x402 facilitator","url":"([^"]+)"/.exec(daemon.output().stdout)?.[1],
        60_000,
        `the facilitator\n${daemon.output().stderr}`,
        50,
      );
      return { daemon, url };
    };

    const exitOf = (daemon: Daemon, ms: number, what = "the daemon"): Promise<void> => {
      if (daemon.exitCode !== null || daemon.signalCode !== null) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${what}: still running after ${ms} ms\n${tail(daemon)}`)),
          ms,
        );
        daemon.once("exit", () => (clearTimeout(timer), resolve()));
      });
    };

    const stop = async (daemon: Daemon, signal: NodeJS.Signals = "SIGTERM"): Promise<void> => {
      if (daemon.exitCode !== null || daemon.signalCode !== null) return;
      const exited = exitOf(daemon, STEP_TIMEOUT_MS, `the daemon after ${signal}`);
      daemon.kill(signal);
      await exited.catch(async (error: unknown) => {
        daemon.kill("SIGKILL");
        await exitOf(daemon, STEP_TIMEOUT_MS, "the daemon after SIGKILL");
        throw error;
      });
    };

    const settle = async (url: string, body: unknown): Promise<Record<string, unknown>> => {
      const response = await fetch(`${url}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
      });
      return (await response.json()) as Record<string, unknown>;
    };

    const query = <T>(sql: string, ...params: unknown[]): T[] => {
      const db = new DatabaseConstructor(dbPath, { readonly: true, fileMustExist: true });
      try {
        return db.prepare(sql).all(...params) as T[];
      } finally {
        db.close();
      }
    };

    const relayedCarrying = async (nonce: Hex): Promise<Hex[]> => {
      const head = await client.getBlockNumber();
      const found: Hex[] = [];
      const from = new Set(relayers.map((r) => r.toLowerCase()));
      for (let number = firstBlock; number <= head; number++) {
        const block = await client.getBlock({ blockNumber: number, includeTransactions: true });
        for (const tx of block.transactions)
          if (
            from.has(tx.from.toLowerCase()) &&
            tx.to?.toLowerCase() === devnet.token.toLowerCase() &&
            tx.input.includes(nonce.slice(2).toLowerCase())
          )
            found.push(tx.hash);
      }
      return found;
    };

    const used = (from: Address, nonce: Hex): Promise<boolean> =>
      client.readContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "authorizationState",
        args: [from, nonce],
      });

    return {
      devnet,
      client,
      offer,
      relayers,
      startDaemon,
      exitOf,
      stop,
      settle,
      query,
      relayedCarrying,
      used,
      tearDown,
    };
  } catch (error) {
    await tearDown();
    throw error;
  }
}
