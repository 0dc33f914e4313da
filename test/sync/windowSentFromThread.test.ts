import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAttributor } from "../../src/attribution/attributeLogs.js";
import { createHttpTransport, type HttpTransport } from "../../src/chain/httpTransport.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import {
  createWindowDecoder,
  type WindowDecoder,
} from "../../src/sync/historical/windowDecoder.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { getLogsParams } from "../../src/chain/getLogs.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import { RetryableError, ShutdownError } from "../../src/errors/base.js";
import { RangeLimitError } from "../../src/errors/rpc.js";
import { fetchWindowRows, type WindowRows } from "../../src/sync/fetchLogRows.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { createPayer, startDevnetWithPayments } from "../helpers/devnetPayments.js";
import { startScriptedRpcServer } from "../helpers/scriptedRpcServer.js";
import { unpackAttribution } from "../../src/rows/packedAttribution.js";

let devnet: Devnet;
let head: number;
const rpc = <T>(method: string, params: unknown[] = []) =>
  createPayer(devnet).rpc<T>(method, params);

beforeAll(async () => {
  ({ devnet, head } = await startDevnetWithPayments(6, 3));
}, 60_000);
afterAll(() => devnet?.stop());

/**
 * A client whose transport counts the eth_getLogs (and transaction batches) it sends from this thread (keeping its settings,
 * so the decode thread may send instead), and a decoder whose thread runs: its first window (before
 * the token, no logs) is decoded here, as every backfill's first is.
 */
async function setUp(rpcOverrides: Record<string, unknown> = {}) {
  const config = testConfig({
    rpc: {
      http: [devnet.httpUrl],
      timeoutMs: 2_000,
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
      ...rpcOverrides,
    },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
  });
  const deps = testDeps(config);
  const inner = createHttpTransport({
    timeoutMs: config.rpc.timeoutMs,
    maxResponseBytes: config.rpc.maxResponseBytes,
  });
  let sentHere = 0;
  const transport: HttpTransport = Object.assign(
    (url: string, body: string, signal: AbortSignal, timeoutMs?: number) => {
      if (body.includes('"eth_getLogs"') || body.includes('"eth_getTransactionByHash"')) sentHere++;
      return inner(url, body, signal, timeoutMs);
    },
    { settings: inner.settings! },
  );
  const client = createRpcClient(deps, { transport });
  const decoder: WindowDecoder = createWindowDecoder({ threadAfterLogs: 0 });
  const fetchDeps = { client, logger: deps.logger, metrics: deps.metrics, chainId: config.chainId };
  const fetch = (from: number, to: number) =>
    fetchWindowRows(
      fetchDeps,
      decoder,
      {
        from,
        to,
        addresses: [devnet.token.toLowerCase() as `0x${string}`],
        topic0: [...PAYMENT_TOPICS],
      },
      to,
    );
  const attributor = createAttributor({
    metrics: deps.metrics,
    chainId: config.chainId,
    store: { unattributed: async (hashes) => [...hashes] },
  });
  /** A window's transactions attributed as the backfill does, without the rows' fetched_at. */
  const attribute = async (window: WindowRows) =>
    unpackAttribution(await attributor.attributeWindow(client, decoder, window)).map((t) => ({
      ...t,
      transaction: t.transaction.slice(0, -1),
    }));
  await fetch(0, 0);
  expect(decoder.sender()).toBeDefined();
  return { deps, fetch, attribute, decoder, sentHere: () => sentHere };
}

// Every test checks that only its first window (before the thread ran) went through this thread's transport.
describe("a backfill window sent from the decode thread", () => {
  test("decodes and attributes to what the same answers give here, and its requests never pass this thread", async () => {
    const { fetch, attribute, decoder, sentHere } = await setUp();
    const fromThread = await fetch(devnet.tokenDeployBlock, head);
    const attributedOnThread = await attribute(fromThread);
    expect(sentHere()).toBe(1);
    await decoder.close();
    // Here: a decoder whose thread never starts, and a client that can only send from this thread.
    const config = testConfig({ rpc: { http: [devnet.httpUrl] } });
    const deps = testDeps(config);
    const http = createHttpTransport({ timeoutMs: 2_000, maxResponseBytes: 1e8 });
    // A wrapper carries no settings: the client sends every request itself.
    const client = createRpcClient(deps, {
      transport: (url, body, signal, timeoutMs) => http(url, body, signal, timeoutMs),
    });
    const mainOnly = createWindowDecoder({ threadAfterLogs: Number.MAX_SAFE_INTEGER });
    const filter = {
      from: devnet.tokenDeployBlock,
      to: head,
      addresses: [devnet.token.toLowerCase() as Hex],
      topic0: [...PAYMENT_TOPICS],
    };
    const here = await fetchWindowRows(
      { client, logger: deps.logger, metrics: deps.metrics, chainId: config.chainId },
      mainOnly,
      filter,
      head,
    );
    const attributor = createAttributor({
      metrics: deps.metrics,
      chainId: config.chainId,
      store: { unattributed: async (hashes) => [...hashes] },
    });
    const attributedHere = unpackAttribution(
      await attributor.attributeWindow(client, mainOnly, here),
    ).map((t) => ({ ...t, transaction: t.transaction.slice(0, -1) }));
    expect(attributedOnThread.length).toBeGreaterThanOrEqual(6);
    expect(attributedOnThread).toEqual(attributedHere);
    expect(fromThread.rows.count).toBeGreaterThanOrEqual(18);
    expect(fromThread.rows.count).toBe(here.rows.count);
    expect([...fromThread.rows.numbers]).toEqual([...here.rows.numbers]);
    expect(Buffer.from(fromThread.rows.text as Uint8Array).toString("latin1")).toEqual(
      Buffer.from(here.rows.text as Uint8Array).toString("latin1"),
    );
    expect(fromThread.txHashes).toEqual(here.txHashes);
    expect(fromThread.blocks).toEqual(here.blocks);
  });

  test("the decode thread tells this thread when each request it sent left, on this thread's clock", async () => {
    const { decoder } = await setUp();
    const filter = {
      from: devnet.tokenDeployBlock,
      to: head,
      addresses: [devnet.token.toLowerCase() as Hex],
      topic0: [...PAYMENT_TOPICS],
    };
    const settings = createHttpTransport({ timeoutMs: 2_000, maxResponseBytes: 1e8 }).settings!;
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "eth_getLogs",
      params: getLogsParams(filter),
    });
    const left: number[] = [];
    const before = performance.now();
    try {
      const decoded = await decoder.sender()!.decode(
        {
          url: devnet.httpUrl,
          body,
          id: 7,
          endpoint: "devnet",
          timeoutMs: 2_000,
          transport: settings,
        },
        { filter, chainId: 8453, finalized: head },
        new AbortController().signal,
        (at) => left.push(at),
      );
      expect(decoded.kind).toBe("rows");
      expect(left).toHaveLength(1);
      expect(left[0]!).toBeGreaterThanOrEqual(before);
      expect(left[0]!).toBeLessThanOrEqual(performance.now());
    } finally {
      await decoder.close();
    }
  });

  test("a node's range limit sent with an HTTP error status (proxyd) reaches the client as a range limit", async () => {
    const { fetch, decoder, sentHere } = await setUp();
    await rpc("devnet_setFaults", [{ maxBlockRange: 2, proxyErrors: true }]);
    try {
      const error = await fetch(devnet.tokenDeployBlock, head).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RangeLimitError);
      expect((error as RangeLimitError).hint).toEqual({ kind: "maxRange", blocks: 2n });
      expect(sentHere()).toBe(1);
    } finally {
      await rpc("devnet_setFaults", [{}]);
      await decoder.close();
    }
  });

  test("an answer over rpc.maxResponseBytes, cut off on the thread, is a range limit (the window is split)", async () => {
    const { fetch, decoder, sentHere } = await setUp({ maxResponseBytes: 4_000 });
    const error = await fetch(devnet.tokenDeployBlock, head).catch((e: unknown) => e);
    expect(sentHere()).toBe(1);
    expect(error).toBeInstanceOf(RangeLimitError);
    expect((error as RangeLimitError).hint).toMatchObject({ kind: "tooLarge" });
    expect((error as RangeLimitError).shortMessage).toContain(
      "exceeds rpc.maxResponseBytes (4000)",
    );
    await decoder.close();
  });

  test("a failure on the thread moves the request to the next endpoint, as on this thread", async () => {
    const chainId = await rpc<string>("eth_chainId");
    // Verifies as the right chain and answers the first (empty) window, then fails every eth_getLogs with 503.
    const failing = await startScriptedRpcServer((request) => {
      if (request.method === "eth_chainId") return { result: chainId };
      const [filter] = request.params as Array<{ fromBlock: string }>;
      return filter?.fromBlock === "0x0"
        ? { result: [] }
        : { http: 503, body: "Service Unavailable" };
    });
    try {
      const { deps, fetch, decoder, sentHere } = await setUp({
        http: [failing.url, devnet.httpUrl],
      });
      const rows = await fetch(devnet.tokenDeployBlock, head);
      expect(rows.rows.count).toBeGreaterThanOrEqual(18);
      expect(sentHere()).toBe(1);
      expect(failing.requests.filter((r) => r.method === "eth_getLogs")).toHaveLength(2);
      expect(deps.lines.find((l) => l.msg === "Retrying RPC request")).toMatchObject({
        method: "eth_getLogs",
        endpoint: failing.url,
        error: `${failing.url} answered HTTP 503`,
      });
      await decoder.close();
    } finally {
      await failing.close();
    }
  });

  test("timeouts and 503s are retried and then reported as the transport's failures", async () => {
    const { deps, fetch, decoder, sentHere } = await setUp({ timeoutMs: 300 });
    try {
      await rpc("devnet_setFaults", [{ latencyMs: 1_000 }]);
      const timedOut = await fetch(devnet.tokenDeployBlock, head).catch((e: unknown) => e);
      expect(timedOut).toBeInstanceOf(RetryableError);
      expect((timedOut as RetryableError).shortMessage).toMatch(
        /eth_getLogs failed after 2 attempts .*timed out/,
      );
      await rpc("devnet_setFaults", [{ errorRate: 1 }]);
      const unavailable = await fetch(devnet.tokenDeployBlock, head).catch((e: unknown) => e);
      expect(unavailable).toBeInstanceOf(RetryableError);
      // The devnet answers 503 (an outage: an attempt spent) or 429 (a rate limit: asked again, never spent).
      expect((unavailable as RetryableError).shortMessage).toMatch(
        /failed after 2 attempts .*answered HTTP 503/,
      );
      expect(
        deps.lines.filter(
          (l) =>
            l.msg === "Retrying RPC request" &&
            l.method === "eth_getLogs" &&
            l.rate_limited === false,
        ),
      ).toHaveLength(2);
      expect(sentHere()).toBe(1);
    } finally {
      await rpc("devnet_setFaults", [{}]);
      await decoder.close();
    }
  });

  test("a shutdown aborts the request on the thread at once", async () => {
    const { deps, fetch, decoder, sentHere } = await setUp({ timeoutMs: 30_000 });
    await rpc("devnet_setFaults", [{ latencyMs: 10_000 }]);
    try {
      const pending = fetch(devnet.tokenDeployBlock, head).catch((e: unknown) => e);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = performance.now();
      await deps.shutdown.kill();
      expect(await pending).toBeInstanceOf(ShutdownError);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(sentHere()).toBe(1);
    } finally {
      await rpc("devnet_setFaults", [{}]);
      await decoder.close();
    }
  });
});
