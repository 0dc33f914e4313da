import { afterEach, describe, expect, test } from "vitest";
import { BATCH_SIZE } from "../../src/chain/getTransactions.js";
import { PACE_SHARE } from "../../src/chain/adaptiveRate.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import {
  PrunedHistoryError,
  RangeLimitError,
  RateLimitedError,
  WrongChainError,
} from "../../src/errors/rpc.js";
import { RetryableError } from "../../src/errors/base.js";
import {
  startScriptedRpcServer,
  type Reply,
  type RpcRequest,
} from "../helpers/scriptedRpcServer.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { redactText } from "../../src/ops/redact.js";

const servers: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server(answer: (request: RpcRequest) => Reply | Promise<Reply>) {
  const s = await startScriptedRpcServer((request) =>
    request.method === "eth_chainId" ? { result: "0x2105" } : answer(request),
  );
  servers.push(s);
  return s;
}

function client(urls: string[], rpc: Record<string, unknown> = {}) {
  const deps = testDeps(testConfig({ rpc: { http: urls, ...rpc } }));
  return { ...deps, client: createRpcClient(deps) };
}

describe("createRpcClient()", () => {
  test("retries HTTP 503 and malformed JSON, then returns the result", async () => {
    let calls = 0;
    const s = await server(() => {
      calls++;
      if (calls === 1) return { http: 503 };
      if (calls === 2) return { http: 200, body: "{not json" };
      return { result: "0x10" };
    });
    const { client: rpc, metrics } = client([s.url]);
    await expect(rpc.request("eth_blockNumber", [])).resolves.toBe("0x10");
    expect(calls).toBe(3);
    const counts = await metrics.rpcRequests.get();
    expect(counts.values.find((v) => v.labels.outcome === "retryable")?.value).toBe(2);
  });

  test("fails over to the next endpoint when the first is down", async () => {
    const down = await server(() => ({ http: 502 }));
    const up = await server(() => ({ result: "0x20" }));
    const { client: rpc } = client([down.url, up.url]);
    await expect(rpc.request("eth_blockNumber", [])).resolves.toBe("0x20");
  });

  test("gives up with a temporary failure (exit 75) once attempts run out", async () => {
    const s = await server(() => ({ http: 503 }));
    const { client: rpc } = client([s.url]);
    const error = await rpc.request("eth_blockNumber", []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryableError);
    expect((error as RetryableError).exitCode).toBe(75);
    expect(s.requests.filter((r) => r.method === "eth_blockNumber")).toHaveLength(4);
  });

  test("does not retry a permanent error such as method not found", async () => {
    const s = await server(() => ({
      error: { code: -32601, message: "the method eth_foo does not exist" },
    }));
    const { client: rpc } = client([s.url]);
    await expect(rpc.request("eth_foo", [])).rejects.toThrow(/does not exist/);
    expect(s.requests.filter((r) => r.method === "eth_foo")).toHaveLength(1);
  });

  test("turns a provider's range rejection into a RangeLimitError without retrying", async () => {
    const s = await server(() => ({
      error: {
        code: -32005,
        message: "query returned more than 10000 results. Try with this block range [0x1, 0x5].",
      },
    }));
    const { client: rpc } = client([s.url]);
    const error = await rpc.request("eth_getLogs", [{}]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeLimitError);
    expect(s.requests.filter((r) => r.method === "eth_getLogs")).toHaveLength(1);
  });

  test("refuses an answer larger than rpc.maxResponseBytes as a range limit", async () => {
    const s = await server(() => ({ result: "x".repeat(5_000) }));
    const { client: rpc } = client([s.url], { maxResponseBytes: 2_048 });
    await expect(rpc.request("eth_getLogs", [{}])).rejects.toBeInstanceOf(RangeLimitError);
  });

  test("refuses an endpoint that serves another chain, before using it", async () => {
    const other = await startScriptedRpcServer(() => ({ result: "0x1" }));
    servers.push(other);
    const { client: rpc } = client([other.url]);
    await expect(rpc.verifyEndpoints()).rejects.toBeInstanceOf(WrongChainError);
    await expect(rpc.request("eth_blockNumber", [])).rejects.toBeInstanceOf(WrongChainError);
    expect(other.requests.map((r) => r.method)).not.toContain("eth_blockNumber");
  });

  test("retries an answer its parser rejects", async () => {
    let calls = 0;
    const s = await server(() => ({ result: ++calls === 1 ? "garbage" : "0x5" }));
    const { client: rpc } = client([s.url]);
    const parse = (value: unknown) => {
      if (value !== "0x5") throw new RetryableError("bad answer");
      return 5;
    };
    await expect(rpc.request("eth_blockNumber", [], parse)).resolves.toBe(5);
  });

  test("never puts an API key from the URL in an error or a log line", async () => {
    const s = await server(() => ({ http: 500 }));
    const { client: rpc, lines } = client([`${s.url}/v2/SECRETKEY123`]);
    const error = (await rpc.request("eth_blockNumber", []).catch((e: unknown) => e)) as Error;
    expect(error.message).not.toContain("SECRETKEY123");
    expect(JSON.stringify(lines)).not.toContain("SECRETKEY123");
    expect(JSON.stringify(lines)).toContain("/***");
  });

  test("with the default config nothing is paced before a provider refuses: a window's calldata goes in full batches", async () => {
    const s = await server((request) => ({ result: request.method }));
    const { client: rpc, config } = client([s.url]);
    expect(config.rpc.requestsPerSecond).toBeUndefined();
    expect(rpc.batchCalls()).toBeGreaterThanOrEqual(BATCH_SIZE);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        rpc.batch(
          Array.from({ length: BATCH_SIZE }, () => ({
            method: "eth_getTransactionByHash",
            params: [],
          })),
        ),
      ),
    );
    expect(answers.flat().filter((a) => a.ok)).toHaveLength(8 * BATCH_SIZE);
    // Before, a default ceiling of 50 calls a second cut these 4,000 calls into 50-call batches, 80 s of waiting.
    expect(rpc.batchCalls()).toBeGreaterThanOrEqual(BATCH_SIZE);
    expect(rpc.rateLimited()).toBe(false);
  });

  test("a rate limit (HTTP 429 or a provider's rate-limit error) never spends the attempt budget: the request is asked again until answered", async () => {
    let calls = 0;
    const s = await server(() => {
      calls++;
      if (calls <= 3)
        return {
          http: 429,
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32016, message: "over rate limit" },
          }),
        };
      if (calls <= 4)
        return { error: { code: -32005, message: "project ID request rate exceeded" } };
      return { result: "0x30" };
    });
    const {
      client: rpc,
      metrics,
      lines,
    } = client([s.url], { retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } });
    await expect(rpc.request("eth_blockNumber", [])).resolves.toBe("0x30");
    expect(calls).toBe(5);
    const counts = await metrics.rpcRequests.get();
    expect(counts.values.find((v) => v.labels.outcome === "rate_limited")?.value).toBe(4);
    expect(lines.filter((l) => l.msg === "Gave up on RPC request")).toHaveLength(0);
    // No ceiling: four refusals in a row after the first answer are a rate limit met at once. The rate
    // goes just under the one call (eth_chainId) the server accepted in the second before.
    const cuts = lines
      .filter((l) => l.msg === "Slowed RPC requests after a rate limit")
      .map((l) => l.requests_per_second);
    expect(cuts).toEqual([Math.round(PACE_SHARE * 100) / 100]);
  });

  test("Retry-After on a 429 holds back every request of the client until it expires, not only the refused one", async () => {
    let refusedAt = 0;
    const arrivals: Array<{ method: string; at: number }> = [];
    const s = await startScriptedRpcServer((request) => {
      arrivals.push({ method: request.method, at: Date.now() });
      if (request.method === "eth_chainId") return { result: "0x2105" };
      if (request.method === "eth_blockNumber" && refusedAt === 0) {
        refusedAt = Date.now();
        return { http: 429, headers: { "retry-after": "1" } };
      }
      return { result: "0x1" };
    });
    servers.push(s);
    const { client: rpc } = client([s.url]);
    const first = rpc.request("eth_blockNumber", []);
    // Asked once the refusal is back: it must wait the refusal's second out too.
    while (refusedAt === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = rpc.request("eth_gasPrice", []);
    await expect(Promise.all([first, second])).resolves.toEqual(["0x1", "0x1"]);
    const after = arrivals.filter((a) => a.at > refusedAt);
    expect(after.map((a) => a.method).sort()).toEqual(["eth_blockNumber", "eth_gasPrice"]);
    for (const a of after) expect(a.at - refusedAt).toBeGreaterThanOrEqual(990);
  });

  test("a rate-limit error naming its wait (Infura's data.backoff_seconds) is asked again only after it", async () => {
    const arrivals: number[] = [];
    const s = await server(() => {
      arrivals.push(Date.now());
      if (arrivals.length === 1)
        return {
          error: {
            code: -32005,
            message: "project ID request rate exceeded",
            data: { current_rps: 13, allowed_rps: 10, backoff_seconds: 1 },
          },
        };
      return { result: "0x40" };
    });
    const { client: rpc } = client([s.url]);
    await expect(rpc.request("eth_blockNumber", [])).resolves.toBe("0x40");
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(990);
  });

  test("a head request with a short timeout that hangs is hedged to the next endpoint, and the first answer wins", async () => {
    const hung = await server(() => new Promise<Reply>(() => undefined));
    const up = await server(() => ({ result: "0x50" }));
    const { client: rpc, metrics } = client([hung.url, up.url]);
    await expect(rpc.withTimeout(2_000).request("eth_blockNumber", [])).resolves.toBe("0x50");
    expect(hung.requests.filter((r) => r.method === "eth_blockNumber")).toHaveLength(1);
    expect(up.requests.filter((r) => r.method === "eth_blockNumber")).toHaveLength(1);
    // Answered by the hedge long before the hung request's timeout: nothing failed yet.
    const counts = await metrics.rpcRequests.get();
    expect(counts.values.filter((v) => v.labels.outcome !== "ok")).toEqual([]);
  });

  test("background requests are not hedged: they wait for their timeout", async () => {
    let calls = 0;
    const s = await server(() =>
      ++calls === 1
        ? new Promise<Reply>((resolve) => setTimeout(() => resolve({ result: "0x60" }), 600))
        : { result: "0x61" },
    );
    const { client: rpc } = client([s.url]);
    await expect(rpc.withTimeout(1_000).background().request("eth_blockNumber", [])).resolves.toBe(
      "0x60",
    );
    expect(calls).toBe(1);
  });

  test("refusingRateLimits() throws a 429 to its caller at once and leaves the rest of the client at full pace", async () => {
    const arrivals: string[] = [];
    const s = await startScriptedRpcServer((request) => {
      arrivals.push(request.method);
      if (request.method === "eth_chainId") return { result: "0x2105" };
      if (request.method === "eth_getBlockByNumber")
        return { http: 429, headers: { "retry-after": "5" } };
      return { result: "0x1" };
    });
    servers.push(s);
    const { client: rpc, lines } = client([s.url]);
    const error = await rpc
      .refusingRateLimits()
      .request("eth_getBlockByNumber", ["pending", false])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(5_000);
    expect(arrivals.filter((m) => m === "eth_getBlockByNumber")).toHaveLength(1);
    // No pause, no cut: the head path's next request goes out now, not in 5 s.
    const started = Date.now();
    await expect(rpc.request("eth_blockNumber", [])).resolves.toBe("0x1");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(lines.filter((l) => l.msg === "Slowed RPC requests after a rate limit")).toHaveLength(0);
  });

  test("the final error names the failing endpoint with its credentials stripped, also as the CLI prints it", async () => {
    const s = await server(() => ({ http: 503 }));
    const withCredentials =
      s.url.replace("http://", "http://indexer:hunter2@") + "/v2/SECRETKEY123";
    const { client: rpc } = client([withCredentials], {
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
    });
    const error = (await rpc
      .request("eth_blockNumber", [])
      .catch((e: unknown) => e)) as RetryableError;
    const shown = redactText(error.shortMessage);
    const redacted = s.url.replace("http://", "http://***@") + "/***";
    expect(error.shortMessage).toContain(`(last from ${redacted})`);
    expect(shown).toContain(`(last from ${redacted})`);
    expect(shown).not.toMatch(/invalid url|hunter2|SECRETKEY123|indexer/);
    // Without a path the URL ends at its port, right before "):" (once read as "<invalid url>").
    const plain = (await client([s.url], { retry: { maxAttempts: 1 } })
      .client.request("eth_blockNumber", [])
      .catch((e: unknown) => e)) as RetryableError;
    expect(redactText(plain.shortMessage)).toContain(`(last from ${s.url}): `);
  });

  test("batch() sends one HTTP request and returns results in call order", async () => {
    const s = await server((request) => ({ result: `r-${String(request.params[0])}` }));
    const { client: rpc } = client([s.url]);
    const results = await rpc.batch([
      { method: "eth_getBlockByNumber", params: ["0x2", false] },
      { method: "eth_getBlockByNumber", params: ["0x1", false] },
    ]);
    expect(results).toEqual([
      { ok: true, result: "r-0x2" },
      { ok: true, result: "r-0x1" },
    ]);
  });

  test("reads a JSON-RPC error behind HTTP 400 (Base's public endpoint): a block-range limit splits, with the stated limit", async () => {
    const s = await server(() => ({
      http: 400,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32602, message: "block range greater than 10000 max" },
      }),
    }));
    const { client: rpc } = client([s.url]);
    const error = await rpc.request("eth_getLogs", [{}]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeLimitError);
    expect((error as RangeLimitError).hint).toEqual({ kind: "maxRange", blocks: 10000n });
    expect(s.requests.filter((r) => r.method === "eth_getLogs")).toHaveLength(1);
  });

  test("reads a JSON-RPC error behind HTTP 500: -32020 backend response too large splits", async () => {
    const s = await server(() => ({
      http: 500,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32020, message: "backend response too large" },
      }),
    }));
    const { client: rpc } = client([s.url]);
    const error = await rpc.request("eth_getLogs", [{}]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeLimitError);
    expect((error as RangeLimitError).hint).toEqual({ kind: "tooLarge" });
  });

  test("retries HTTP 503 'no backend is currently healthy' as transient, then returns the result", async () => {
    let calls = 0;
    const s = await server(() =>
      ++calls <= 2
        ? {
            http: 503,
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: 1,
              error: { code: -32011, message: "no backend is currently healthy to serve traffic" },
            }),
          }
        : { result: "0x7" },
    );
    const { client: rpc, metrics } = client([s.url]);
    await expect(rpc.request("eth_blockNumber", [])).resolves.toBe("0x7");
    const counts = await metrics.rpcRequests.get();
    expect(counts.values.find((v) => v.labels.outcome === "retryable")?.value).toBe(2);
  });

  test("a non-2xx answer without a JSON-RPC error body is a transport failure by its status", async () => {
    const s = await server(() => ({ http: 502, body: "<html>Bad Gateway</html>" }));
    const { client: rpc } = client([s.url], {
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
    });
    const error = (await rpc
      .request("eth_blockNumber", [])
      .catch((e: unknown) => e)) as RetryableError;
    expect(error).toBeInstanceOf(RetryableError);
    expect(error.shortMessage).toMatch(/answered HTTP 502/);
    expect(error.shortMessage).toContain(s.url);
  });

  test("error 4444 (history pruned) is fatal at once and tells the user to use an archive endpoint", async () => {
    const s = await server(() => ({
      error: { code: 4444, message: "pruned history unavailable" },
    }));
    const { client: rpc } = client([s.url]);
    const error = (await rpc
      .request("eth_getLogs", [{}])
      .catch((e: unknown) => e)) as PrunedHistoryError;
    expect(error).toBeInstanceOf(PrunedHistoryError);
    expect(error.exitCode).toBe(1);
    expect(error.shortMessage).toMatch(/archive endpoint/);
    expect(s.requests.filter((r) => r.method === "eth_getLogs")).toHaveLength(1);
  });

  test("withTimeout() gives up on a hung request within its own timeout and moves to the next endpoint", async () => {
    const hung = await server(
      () => new Promise<Reply>((resolve) => setTimeout(() => resolve({ result: "0x1" }), 5_000)),
    );
    const up = await server(() => ({ result: "0x2" }));
    const { client: rpc } = client([hung.url, up.url], { timeoutMs: 30_000 });
    const started = Date.now();
    await expect(rpc.withTimeout(200).request("eth_blockNumber", [])).resolves.toBe("0x2");
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  test("the final error after the last attempt names the endpoint and the log says it gave up", async () => {
    const s = await server(() => ({ http: 503 }));
    const { client: rpc, lines } = client([s.url]);
    const error = (await rpc
      .request("eth_blockNumber", [])
      .catch((e: unknown) => e)) as RetryableError;
    expect(error.shortMessage).toContain(`last from ${s.url}`);
    expect(lines.filter((l) => l.msg === "Retrying RPC request")).toHaveLength(3);
    expect(lines.filter((l) => l.msg === "Gave up on RPC request")).toHaveLength(1);
  });
});
