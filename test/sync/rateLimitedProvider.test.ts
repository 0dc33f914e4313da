import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Hex } from "viem";
import { getTransactions } from "../../src/chain/getTransactions.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { runCli, writeConfig } from "../helpers/cli.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { freshDbPath } from "../helpers/fixtures.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";
import { startProviderProxy, type ProviderShape } from "../helpers/providerProxy.js";
import { startScriptedRpcServer } from "../helpers/scriptedRpcServer.js";

let chain: PaymentChain;
let head: number;

beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(4);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}, 60_000);
afterAll(async () => {
  await chain?.stop();
});

/** Every log of the token, straight from the node, keyed by (transaction, log index). */
async function directLogs(): Promise<string[]> {
  const logs = (await chain.publicClient.request({
    method: "eth_getLogs",
    params: [
      {
        fromBlock: "0x0",
        toBlock: `0x${head.toString(16)}`,
        address: chain.token,
        topics: [[...PAYMENT_TOPICS]],
      },
    ],
  } as never)) as Array<{ blockHash: string; logIndex: string; transactionHash: string }>;
  return logs
    .map((l) => `${l.blockHash}|${Number(l.logIndex)}|${l.transactionHash}`.toLowerCase())
    .sort();
}

/** Backfills the whole chain through a provider-shaped proxy into a fresh SQLite file; returns what was stored. */
async function backfillThrough(
  shape: Partial<ProviderShape>,
  concurrency: number,
  attribution = false,
) {
  const proxy = await startProviderProxy(chain.anvil.httpUrl, shape);
  const path = freshDbPath();
  const config = testConfig({
    attribution: { enabled: attribution },
    // The retry budget is small on purpose: a rate limit must not spend it.
    rpc: {
      http: [proxy.url],
      requestsPerSecond: 50,
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
    },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    backfill: { windowBlocks: 1_000, concurrency },
    finality: { depth: 0 },
    database: { path },
  });
  const deps = testDeps(config);
  const client = createRpcClient(deps);
  const store = await openStore(config, { metrics: deps.metrics });
  try {
    await backfill(
      createSyncDeps({ ...deps, client }, store),
      { to: head, finalized: head },
      { decodeThreadAfterLogs: 0 },
    );
  } finally {
    await store.close();
    await proxy.close();
  }
  const db = new Database(path, { readonly: true });
  const stored = (
    db.prepare("SELECT block_hash, log_index, tx_hash FROM logs").all() as Array<{
      block_hash: string;
      log_index: number;
      tx_hash: string;
    }>
  )
    .map((r) => `${r.block_hash}|${r.log_index}|${r.tx_hash}`.toLowerCase())
    .sort();
  db.close();
  return { stored, proxy, lines: deps.lines };
}

describe("a backfill through a rate-limited, range- and result-capped provider", () => {
  test("finishes with every log, none twice, however hard the rate limit refuses", async () => {
    // 3 calls a second against a client configured for 50, with caps small enough to split this chain's windows.
    // Attribution on (the default): its batches of transactions count one call each.
    const { stored, proxy, lines } = await backfillThrough(
      { latencyMs: 80, requestsPerSecond: 3, maxBlockRange: 8, maxResults: 12 },
      4,
      true,
    );
    const expected = await directLogs();
    expect(expected.length).toBeGreaterThan(25);
    expect(stored).toEqual(expected);
    expect(new Set(stored).size).toBe(stored.length);
    // The provider really refused: for the rate, the range and the result count.
    expect(proxy.counts.rateLimited).toBeGreaterThan(0);
    expect(proxy.counts.withRetryAfter).toBeGreaterThan(0);
    expect(proxy.counts.rangeRefused).toBeGreaterThan(0);
    expect(proxy.counts.resultsRefused).toBeGreaterThan(0);
    expect(
      lines.filter((l) => l.msg === "Slowed RPC requests after a rate limit").length,
    ).toBeGreaterThan(0);
    expect(lines.filter((l) => l.msg === "Gave up on RPC request")).toHaveLength(0);
  }, 120_000);

  test("sends no request before a refusal's Retry-After has expired", async () => {
    const latencyMs = 20;
    const { stored, proxy, lines } = await backfillThrough(
      { latencyMs, requestsPerSecond: 2, retryAfterEvery: 1, maxBlockRange: 4 },
      1,
    );
    expect(stored).toEqual(await directLogs());
    const refusals = proxy.events.filter((e) => e.retryAfterMs !== undefined);
    expect(refusals.length).toBeGreaterThan(0);
    // Windows, headers and the like overlap, so a request may have left before the client read the
    // refusal: those arrive within its answer's latency (plus the event-loop lag of this process, which
    // also runs the proxy). Every later request must wait the Retry-After out.
    const inFlightMs = latencyMs + 100;
    for (const refusal of refusals) {
      const early = proxy.events.filter(
        (e) => e.at > refusal.at + inFlightMs && e.at < refusal.at + refusal.retryAfterMs!,
      );
      expect(early.map((e) => e.at - refusal.at)).toEqual([]);
    }
    // Once the client found a rate limit (refusals more than strays would explain; with every
    // refusal's wait honoured, two in ten requests may not be), every call is a window's worth of
    // logs: the progress ticks ask for no block header. One asked before the cut may still be
    // waiting its turn (a Retry-After, then a call every half second).
    const cut = lines.find((l) => l.msg === "Slowed RPC requests after a rate limit");
    const queuedMs = 1_000 + 2 * 500 + inFlightMs;
    if (cut !== undefined) {
      const after = Date.parse(cut.time as string) + queuedMs;
      expect(
        proxy.events.filter((e) => e.at > after && e.method === "eth_getBlockByNumber"),
      ).toEqual([]);
    }
  }, 120_000);
});

describe("a backfill through a provider that refuses a few requests at random (issue 41)", () => {
  test("keeps its rate: 3% of requests refused with HTTP 429 and no real limit are retried, never a new ceiling", async () => {
    const proxy = await startProviderProxy(chain.anvil.httpUrl, {
      latencyMs: 0,
      requestsPerSecond: Number.POSITIVE_INFINITY,
      strayRefusals: 0.03,
      maxBlockRange: 1,
      maxResults: 12,
    });
    const config = (path: string) =>
      testConfig({
        rpc: {
          http: [proxy.url],
          requestsPerSecond: 50,
          retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
        },
        tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
        backfill: { windowBlocks: 1_000, concurrency: 4 },
        finality: { depth: 0 },
        database: { path },
      });
    const deps = testDeps(config(freshDbPath()));
    const client = createRpcClient(deps);
    const expected = await directLogs();
    try {
      // One client over several backfills: enough requests that the strays are a few dozen.
      while (proxy.counts.requests < 500) {
        const path = freshDbPath();
        const store = await openStore(config(path), { metrics: deps.metrics });
        try {
          await backfill(
            createSyncDeps({ ...deps, config: config(path), client }, store),
            { to: head, finalized: head },
            { decodeThreadAfterLogs: 0 },
          );
        } finally {
          await store.close();
        }
        const db = new Database(path, { readonly: true });
        const stored = (
          db.prepare("SELECT block_hash, log_index, tx_hash FROM logs").all() as Array<{
            block_hash: string;
            log_index: number;
            tx_hash: string;
          }>
        )
          .map((r) => `${r.block_hash}|${r.log_index}|${r.tx_hash}`.toLowerCase())
          .sort();
        db.close();
        expect(stored).toEqual(expected);
      }
    } finally {
      await proxy.close();
    }
    expect(proxy.counts.strayRefused).toBeGreaterThanOrEqual(5);
    // Every stray refusal of a single call was asked again (rate_limited in the log; a refused batch is
    // sent again in pieces, unlogged), and none cut the rate: it is still the configured 50.
    const singleStrays = proxy.events.filter(
      (e) => e.outcome === "rate_limited" && e.method !== "batch",
    ).length;
    expect(
      deps.lines.filter((l) => l.msg === "Retrying RPC request" && l.rate_limited === true).length,
    ).toBeGreaterThanOrEqual(singleStrays);
    expect(deps.lines.filter((l) => l.msg === "Slowed RPC requests after a rate limit")).toEqual(
      [],
    );
    expect(client.rateLimited()).toBe(false);
    expect(client.batchCalls()).toBeGreaterThanOrEqual(Math.floor(0.8 * 50));
  }, 180_000);
});

describe("a batch through a provider whose rate is below the batch's size", () => {
  test("is sent again in pieces the rate allows, and every transaction comes back", async () => {
    const hashes = [
      ...new Set(
        (
          (await chain.publicClient.request({
            method: "eth_getLogs",
            params: [
              {
                fromBlock: "0x0",
                toBlock: `0x${head.toString(16)}`,
                address: chain.token,
                topics: [[...PAYMENT_TOPICS]],
              },
            ],
          } as never)) as Array<{ transactionHash: Hex }>
        ).map((l) => l.transactionHash),
      ),
    ];
    expect(hashes.length).toBeGreaterThanOrEqual(8);
    const proxy = await startProviderProxy(chain.anvil.httpUrl, {
      latencyMs: 0,
      requestsPerSecond: 2,
    });
    try {
      const deps = testDeps(
        testConfig({
          rpc: {
            http: [proxy.url],
            requestsPerSecond: 50,
            retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
          },
        }),
      );
      const found = await getTransactions(createRpcClient(deps), hashes);
      expect([...found.keys()].sort()).toEqual(hashes.map((h) => h.toLowerCase()).sort());
      // The whole batch was refused (no 2-call-a-second window holds it); pieces of at most 2 calls got through.
      expect(
        proxy.events.some((e) => e.outcome === "rate_limited" && e.calls === hashes.length),
      ).toBe(true);
      expect(
        Math.max(...proxy.events.filter((e) => e.outcome === "served").map((e) => e.calls)),
      ).toBeLessThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  }, 120_000);
});

describe("flashindex backfill against a failing endpoint", () => {
  test("exits 75 naming the endpoint with its credentials stripped", async () => {
    const down = await startScriptedRpcServer(() => ({ http: 503 }));
    const dir = mkdtempSync(join(tmpdir(), "flashindex-provider-"));
    try {
      const url = `${down.url.replace("http://", "http://indexer:hunter2@")}/v2/SECRETKEY123`;
      const config = writeConfig(dir, {
        chainId: 8453,
        rpc: { http: [url], retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
        tokens: [{ address: chain.token, startBlock: 0 }],
        finality: { depth: 0 },
        database: { path: join(dir, "index.db") },
        metrics: { enabled: false },
        logLevel: "error",
      });
      const { code, stderr } = await runCli(["backfill", "--config", config]);
      expect(code).toBe(75);
      expect(stderr).toContain(`(last from ${down.url.replace("http://", "http://***@")}/***)`);
      expect(stderr).not.toMatch(/invalid url|hunter2|SECRETKEY123|indexer/);
    } finally {
      await down.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
