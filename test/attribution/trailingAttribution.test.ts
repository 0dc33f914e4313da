import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWalletClient, http, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { schema0Suffix } from "../../src/attribution/erc8021Suffix.js";
import { createTrailingAttribution } from "../../src/attribution/trailingAttribution.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import type { Config } from "../../src/config/types.js";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { spawnCli, runCli, writeConfig } from "../helpers/cli.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";
import { startProviderProxy } from "../helpers/providerProxy.js";

afterAll(() => stopFileBackends());

/** The attribution tables as comparable rows (no times, no row ids). */
const ATTRIBUTION_QUERIES = {
  transactions:
    "SELECT tx_hash, from_address, to_address, selector, input_bytes, attribution, schema_id, malformed_reason, user_operations, operation_logs FROM transactions ORDER BY tx_hash",
  codes:
    "SELECT tx_hash, op_index, position, code, role, registry FROM attribution_codes ORDER BY tx_hash, op_index, position",
  credited:
    "SELECT tx_hash, log_index, code FROM attributed_transfers ORDER BY tx_hash, log_index, code",
} as const;

type AttributionRows = Record<keyof typeof ATTRIBUTION_QUERIES, Array<Record<string, unknown>>>;

/** Sends the buyer's transfers carrying a builder code, two of them mined in one block (a block read whole). */
async function addCodedTransfers(chain: PaymentChain): Promise<void> {
  const account = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1] as Hex);
  const wallet = createWalletClient({ account, transport: http(chain.anvil.httpUrl) });
  const rpc = (method: string, params: unknown[]) =>
    chain.publicClient.request({ method, params } as never);
  let nonce = Number(await rpc("eth_getTransactionCount", [account.address, "pending"]));
  const send = (i: number) =>
    wallet.writeContract({
      address: chain.token,
      abi: flashTestTokenAbi,
      functionName: "transfer",
      args: [`0x${(0xc0de00 + i).toString(16).padStart(40, "0")}`, BigInt(i + 1)],
      chain: null,
      gas: 200_000n,
      nonce: nonce++,
      dataSuffix: schema0Suffix([`bc_trail${i}`]),
    } as never);
  await rpc("evm_setAutomine", [false]);
  await send(0);
  await send(1);
  await rpc("evm_mine", []);
  await rpc("evm_setAutomine", [true]);
  for (let i = 2; i < 5; i++)
    await chain.publicClient.waitForTransactionReceipt({ hash: await send(i) });
}

/** A config for `database`, reading the chain at `url`, attribution on. */
function configFor(chain: PaymentChain, url: string, database: Record<string, unknown>): Config {
  return testConfig({
    rpc: {
      http: [url],
      requestsPerSecond: 50,
      retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
    },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    backfill: { windowBlocks: 10, concurrency: 2 },
    finality: { depth: 0 },
    database,
  });
}

/**
 * Makes the provider refuse the client for its rate, more than strays would explain (a dozen
 * refusals among 16 calls at once), so the backfill knows it is rate-limited from its first window.
 */
async function hitTheRateLimit(
  client: RpcClient,
  proxy: { counts: { rateLimited: number } },
): Promise<void> {
  await Promise.all(Array.from({ length: 16 }, () => client.request("eth_blockNumber", [])));
  expect(proxy.counts.rateLimited).toBeGreaterThan(0);
  expect(client.rateLimited()).toBe(true);
}

/**
 * A backfill to `head` through a rate-limited proxy (4 calls/s, `latencyMs`) into a fresh database
 * of `backend`, the client refused once before it starts: the logs stored, their blocks owed. The
 * store and reader stay open for the test; `close` closes them and the proxy.
 */
async function rateLimitedBackfill(
  chain: PaymentChain,
  backend: TestBackend,
  head: number,
  latencyMs: number,
) {
  const proxy = await startProviderProxy(chain.anvil.httpUrl, { latencyMs, requestsPerSecond: 4 });
  const config = configFor(chain, proxy.url, await backend.freshDatabase());
  const deps = testDeps(config);
  const client = createRpcClient(deps);
  const store = await openStore(config, { metrics: deps.metrics });
  const reader = await backend.reader(config.database);
  const close = async () => {
    await reader.close();
    await store.close();
    await proxy.close();
  };
  try {
    await hitTheRateLimit(client, proxy);
    const syncDeps = createSyncDeps({ ...deps, client }, store);
    await backfill(syncDeps, { to: head, finalized: head });
    return { proxy, config, deps, store, reader, syncDeps, close };
  } catch (error) {
    await close();
    throw error;
  }
}

describe.each(BACKENDS)(
  "attribution trailing a rate-limited backfill ($name)",
  (backend: TestBackend) => {
    let chain: PaymentChain;
    let head: number;
    let reference: AttributionRows;

    async function readAttribution(database: Config["database"]): Promise<AttributionRows> {
      const reader = await backend.reader(database);
      try {
        const rows = {} as AttributionRows;
        for (const [name, sql] of Object.entries(ATTRIBUTION_QUERIES))
          rows[name as keyof AttributionRows] = await reader.all(sql);
        return rows;
      } finally {
        await reader.close();
      }
    }

    beforeAll(async () => {
      chain = await startPaymentChain();
      await chain.addTraffic(6);
      await addCodedTransfers(chain);
      head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
      // The reference: the same chain backfilled from the node directly, attribution read with each window.
      const config = configFor(chain, chain.anvil.httpUrl, await backend.freshDatabase());
      const deps = testDeps(config);
      const store = await openStore(config, { metrics: deps.metrics });
      try {
        await backfill(createSyncDeps({ ...deps, client: createRpcClient(deps) }, store), {
          to: head,
          finalized: head,
        });
      } finally {
        await store.close();
      }
      reference = await readAttribution(config.database);
      expect(reference.codes.length).toBeGreaterThanOrEqual(5);
    }, 120_000);
    afterAll(async () => {
      await chain?.stop();
    });

    test("stores the logs first, owes their blocks, then attributes them row for row as an unlimited backfill, at most one call a block", async () => {
      const { config, deps, store, reader, syncDeps, close } = await rateLimitedBackfill(
        chain,
        backend,
        head,
        20,
      );
      try {
        // Logs stored, no calldata read: every block holding one is owed, each payment listed as owed.
        const blocks = await reader.all<{ n: number }>(
          "SELECT COUNT(DISTINCT block_number) AS n FROM logs",
        );
        const owed = await store.owedAttribution.next(1_000);
        expect(owed.map((b) => b.number)).toEqual(
          [...owed.map((b) => b.number)].sort((a, b) => a - b),
        );
        expect(owed).toHaveLength(Number(blocks[0]!.n));
        expect(await reader.all("SELECT tx_hash FROM transactions")).toEqual([]);
        const [transfers] = await reader.all<{ n: number }>(
          "SELECT COUNT(*) AS n FROM live_transfers",
        );
        const [listed] = await reader.all<{ n: number }>(
          "SELECT COUNT(*) AS n FROM owed_attribution_transfers",
        );
        expect(Number(listed!.n)).toBe(Number(transfers!.n));
        expect(
          (await reader.all("SELECT * FROM unattributed_transfers")).length +
            (await reader.all("SELECT * FROM attributed_transfers")).length,
        ).toBe(0);

        // Paid through a provider of its own, so what it serves is the trailing stage's calls alone.
        const own = await startProviderProxy(chain.anvil.httpUrl, {
          latencyMs: 20,
          requestsPerSecond: 4,
        });
        const trailing = createTrailingAttribution(
          {
            ...syncDeps,
            client: createRpcClient({
              ...deps,
              config: { ...config, rpc: { ...config.rpc, http: [own.url] } },
            }),
            attributor: syncDeps.attributor!,
          },
          { mode: "batch" },
        );
        const paid = await trailing.payAll().finally(() => own.close());
        await trailing.close();
        expect(paid.blocks).toBe(owed.length);
        expect(await store.owedAttribution.count()).toBe(0);
        expect(await reader.all("SELECT * FROM owed_attribution_transfers")).toEqual([]);
        expect(await deps.metrics.attributionOwedBlocks.get()).toMatchObject({
          values: [{ value: 0 }],
        });
        // Through the provider: at most one calldata call per owed block (a batch's calls each counted).
        // eth_chainId first (an endpoint is checked before its first use), then the calldata.
        const served =
          own.events.filter((e) => e.outcome === "served").reduce((sum, e) => sum + e.calls, 0) - 1;
        expect(served).toBeGreaterThan(0);
        expect(served).toBeLessThanOrEqual(owed.length);
        expect(await readAttribution(config.database)).toEqual(reference);
      } finally {
        await close();
      }
    }, 120_000);

    test("flashindex backfill killed -9 while attribution trails resumes it on restart: no gap, nothing twice", async () => {
      // A slow provider: the trailing stage pays a few blocks at a time for seconds.
      const proxy = await startProviderProxy(chain.anvil.httpUrl, {
        latencyMs: 50,
        requestsPerSecond: 2,
      });
      const dir = mkdtempSync(join(tmpdir(), "flashindex-trailing-"));
      const database = await backend.freshDatabase();
      const file = {
        chainId: 8453,
        rpc: { http: [proxy.url] },
        tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
        backfill: { windowBlocks: 10 },
        finality: { depth: 0 },
        database,
        metrics: { enabled: false },
        logLevel: "info",
      };
      const path = writeConfig(dir, file);
      let reader: Awaited<ReturnType<TestBackend["reader"]>> | undefined;
      try {
        const first = spawnCli(["backfill", "--config", path, "--to", String(head)]);
        const exited = new Promise((resolve) => first.on("exit", resolve));
        await waitFor(
          () => first.output().stderr.includes('"msg":"Backfilled logs; attribution trails"'),
          60_000,
          "the logs stored",
        );
        const line = first
          .output()
          .stderr.split("\n")
          .find((l) => l.includes("Backfilled logs; attribution trails"))!;
        const owedAtStart = (JSON.parse(line) as { owed_blocks: number }).owed_blocks;
        expect(owedAtStart).toBeGreaterThan(10);
        const db = (reader = await backend.reader(database as Config["database"]));
        // Killed once a payment is committed and before the last.
        await waitFor(
          async () => {
            const [row] = await db.all<{ n: number }>("SELECT COUNT(*) AS n FROM attribution_owed");
            return Number(row!.n) < owedAtStart;
          },
          60_000,
          "a payment committed",
        );
        first.kill("SIGKILL");
        await exited;
        const [left] = await db.all<{ n: number }>("SELECT COUNT(*) AS n FROM attribution_owed");
        expect(Number(left!.n)).toBeGreaterThan(0);
        // Visible meanwhile: flashindex status counts the owed blocks.
        const status = await runCli(["status", "--config", path, "--json"]);
        expect(status.code, status.stderr).toBe(0);
        const shown = (JSON.parse(status.stdout) as { attribution_owed_blocks: number })
          .attribution_owed_blocks;
        expect(shown).toBeGreaterThan(0);
        expect(shown).toBeLessThanOrEqual(Number(left!.n));

        const second = await runCli(["backfill", "--config", path, "--to", String(head), "--json"]);
        expect(second.code, second.stderr).toBe(0);
        // What the killed process left owed (a Postgres commit it had sent may still land after the kill).
        const { logs, trailed_blocks: trailedBlocks } = JSON.parse(second.stdout) as {
          logs: number;
          trailed_blocks: number;
        };
        expect(logs).toBe(0);
        expect(trailedBlocks).toBeGreaterThan(0);
        expect(trailedBlocks).toBeLessThanOrEqual(Number(left!.n));
        expect(second.stderr).toContain('"msg":"Backfilled logs; attribution trails"');
        expect(await db.all("SELECT * FROM attribution_owed")).toEqual([]);
        expect(await readAttribution(database as Config["database"])).toEqual(reference);
      } finally {
        await reader?.close();
        await proxy.close();
      }
    }, 180_000);

    test("flashindex start pays what a rate-limited backfill left owed, beside realtime", async () => {
      const { proxy, config, store, reader } = await rateLimitedBackfill(chain, backend, head, 20);
      try {
        expect(await store.owedAttribution.count()).toBeGreaterThan(0);
      } finally {
        await reader.close();
        await store.close();
      }
      const dir = mkdtempSync(join(tmpdir(), "flashindex-trailing-"));
      const path = writeConfig(dir, {
        chainId: 8453,
        rpc: { http: [proxy.url] },
        tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
        finality: { depth: 0 },
        realtime: { headPollIntervalMs: 200, pendingPollIntervalMs: 0 },
        database: config.database,
        metrics: { enabled: false },
        logLevel: "info",
      });
      const daemon = spawnCli(["start", "--config", path]);
      const exited = new Promise((resolve) => daemon.on("exit", resolve));
      try {
        // Both, in either order: the owed blocks are paid in the background of the head follower.
        await waitFor(
          () => daemon.output().stdout.includes('"msg":"Caught up with owed attribution"'),
          90_000,
          "the owed blocks paid",
        );
        await waitFor(
          () => daemon.output().stdout.includes('"msg":"Caught up with the head"'),
          30_000,
          "the head followed",
        );
        expect(await readAttribution(config.database)).toEqual(reference);
        const reader = await backend.reader(config.database);
        expect(await reader.all("SELECT * FROM attribution_owed")).toEqual([]);
        await reader.close();
      } finally {
        daemon.kill("SIGTERM");
        await exited;
        await proxy.close();
      }
    }, 180_000);
  },
);

describe.each(BACKENDS)(
  "an owed block reorged before it is paid ($name)",
  (backend: TestBackend) => {
    let chain: PaymentChain;
    afterAll(async () => {
      await chain?.stop();
    });

    test("is dropped from what is owed, never attributed from the block now at its height", async () => {
      chain = await startPaymentChain();
      await chain.addTraffic(2);
      await addCodedTransfers(chain);
      const head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
      const { deps, store, reader, syncDeps, close } = await rateLimitedBackfill(
        chain,
        backend,
        head,
        0,
      );
      try {
        const owed = await store.owedAttribution.next(1_000);
        const last = owed.at(-1)!;
        expect(last.number).toBe(head);
        // The chain replaces its head block (its coded transfer dropped); the head follower flags its logs removed.
        await chain.publicClient.request({ method: "anvil_reorg", params: [1, []] } as never);
        const replaced = await chain.publicClient.getBlock({ blockNumber: BigInt(head) });
        expect(replaced.hash).not.toBe(last.hash);
        await store.applyChainChange(
          {
            kind: "reorg",
            orphaned: [{ number: last.number, hash: last.hash }],
            blocks: [],
            synced: [],
          },
          Date.now(),
        );

        const trailing = createTrailingAttribution(
          { ...syncDeps, attributor: syncDeps.attributor! },
          { mode: "batch" },
        );
        expect(await trailing.payAll()).toMatchObject({ blocks: owed.length });
        await trailing.close();
        expect(await store.owedAttribution.count()).toBe(0);
        const stored = (
          await reader.all<{ tx_hash: string }>("SELECT tx_hash FROM transactions")
        ).map((r) => r.tx_hash);
        expect(stored.length).toBeGreaterThan(0);
        for (const hash of last.txHashes) expect(stored).not.toContain(hash);
        // Every other owed block's transactions are attributed.
        expect(stored.sort()).toEqual(
          owed
            .slice(0, -1)
            .flatMap((b) => b.txHashes)
            .sort(),
        );
        expect(deps.lines.some((l) => l.msg === "Dropped owed attribution of reorged blocks")).toBe(
          true,
        );
      } finally {
        await close();
      }
    }, 120_000);
  },
);
