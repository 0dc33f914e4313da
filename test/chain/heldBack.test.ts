import { afterEach, describe, expect, test } from "vitest";
import type { Hex } from "viem";
import { createRpcClient, type OutgoingRequest } from "../../src/chain/rpcClient.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import {
  createWindowDecoder,
  type WindowDecoder,
} from "../../src/sync/historical/windowDecoder.js";
import { HeldBackError } from "../../src/errors/rpc.js";
import { fetchWindowRows } from "../../src/sync/fetchLogRows.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startScriptedRpcServer } from "../helpers/scriptedRpcServer.js";

const TOKEN = "0x00000000000000000000000000000000000f1a54" as Hex;

describe("a request let go before a rate refusal and not sent yet", () => {
  const closes: Array<() => unknown> = [];
  afterEach(async () => {
    for (const close of closes.splice(0).reverse()) await close();
  });

  /** A client on a real HTTP server that answers every eth_getLogs with no logs, and a decoder whose thread runs. */
  async function setUp() {
    const server = await startScriptedRpcServer((request) =>
      request.method === "eth_chainId" ? { result: "0x2105" } : { result: [] },
    );
    closes.push(() => server.close());
    const config = testConfig({
      rpc: { http: [server.url], retry: { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 5 } },
      tokens: [{ address: TOKEN, startBlock: 0 }],
    });
    const deps = testDeps(config);
    const client = createRpcClient(deps);
    const decoder: WindowDecoder = createWindowDecoder({ threadAfterLogs: 0 });
    closes.push(() => decoder.close());
    const filter = {
      from: 0,
      to: 0,
      addresses: [TOKEN.toLowerCase() as Hex],
      topic0: [...PAYMENT_TOPICS],
    };
    // The first window is decoded on this thread; the thread runs from then on.
    await fetchWindowRows(
      { client, logger: deps.logger, metrics: deps.metrics, chainId: config.chainId },
      decoder,
      filter,
      0,
    );
    const thread = decoder.sender();
    expect(thread).toBeDefined();
    return {
      server,
      deps,
      client,
      thread: thread!,
      window: { filter, chainId: config.chainId, finalized: 0 },
    };
  }

  test("is not sent by the decode thread once the provider's refusals moved, and is sent when they did not", async () => {
    const { server, thread, window } = await setUp();
    const refusals = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "eth_getLogs",
      params: [{ fromBlock: "0x0", toBlock: "0x0", address: [TOKEN] }],
    });
    const request: OutgoingRequest = {
      url: server.url,
      body,
      id: 7,
      endpoint: server.url,
      timeoutMs: 5_000,
      transport: { timeoutMs: 5_000, maxResponseBytes: 1 << 20 },
      refusals,
    };
    const sentBefore = server.requests.length;
    const signal = new AbortController().signal;

    // Let go at 0 refusals; a refusal came back before the thread got to it.
    Atomics.add(refusals, 0, 1);
    await expect(
      thread.decode({ ...request, refusalsSeen: 0 }, window, signal),
    ).rejects.toBeInstanceOf(HeldBackError);
    expect(server.requests.length).toBe(sentBefore);

    // Let go after that refusal: sent and decoded.
    await expect(
      thread.decode({ ...request, refusalsSeen: 1 }, window, signal),
    ).resolves.toMatchObject({ kind: "rows" });
    expect(server.requests.length).toBe(sentBefore + 1);
  });

  test("is asked again through the limiter: neither a failure of the attempt budget nor a request to log", async () => {
    const { deps, client } = await setUp();
    let tries = 0;
    const seen: Array<number | undefined> = [];
    const answer = await client.requestRaw(
      "eth_getLogs",
      [{ fromBlock: "0x0", toBlock: "0x0" }],
      async () => "sent here",
      async (request) => {
        seen.push(request.refusalsSeen);
        if (++tries === 1) throw new HeldBackError("not sent");
        return "sent by the thread";
      },
    );
    // rpc.retry.maxAttempts is 1: a held-back try spent none of it.
    expect(answer).toBe("sent by the thread");
    expect(tries).toBe(2);
    // Every try carries the client's refusal count as it was let go.
    expect(seen).toEqual([0, 0]);
    expect(
      deps.lines.filter(
        (line) => line.msg === "Retrying RPC request" || line.msg === "Gave up on RPC request",
      ),
    ).toEqual([]);
  });
});
