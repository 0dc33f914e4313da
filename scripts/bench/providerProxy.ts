import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What a hosted provider imposes: the defaults are the shape issue 32 measured against. */
export type ProviderShape = {
  /** Added to every answer, refusals included (ms). */
  latencyMs: number;
  /** Calls a second (a batch's calls each count, as hosted providers bill them); beyond it HTTP 429. */
  requestsPerSecond: number;
  /** Every `retryAfterEvery`-th refusal carries `Retry-After: retryAfterSeconds` (2: every other one). */
  retryAfterEvery: number;
  retryAfterSeconds: number;
  /** An eth_getLogs range wider than this (blocks) is refused as proxyd refuses it. */
  maxBlockRange: number;
  /** An eth_getLogs answer with more logs than this is refused as geth-derived nodes refuse it. */
  maxResults: number;
  /**
   * Share of requests refused with HTTP 429 at random, whatever the rate, without a Retry-After: a
   * provider's stray refusals (a burst limit on another dimension, a noisy neighbour; issue 41).
   */
  strayRefusals: number;
};

export const DEFAULT_PROVIDER_SHAPE: ProviderShape = {
  latencyMs: 80,
  requestsPerSecond: 5,
  retryAfterEvery: 2,
  retryAfterSeconds: 1,
  maxBlockRange: 2_000,
  maxResults: 10_000,
  strayRefusals: 0,
};

/** What the proxy did, for a test's assertions and a bench row. */
export type ProviderCounts = {
  /** HTTP requests, and the calls they carried (a batch's calls each). */
  requests: number;
  calls: number;
  /** Requests refused for the rate (HTTP 429, strays included), how many of those named a wait, and the strays. */
  rateLimited: number;
  withRetryAfter: number;
  strayRefused: number;
  /** eth_getLogs refused for their range or their result count. */
  rangeRefused: number;
  resultsRefused: number;
  /** Logs in the eth_getLogs answers served. */
  logsServed: number;
  /** Bytes of every answer body sent back (refusals included): what the client downloaded. */
  bytesServed: number;
};

/** One request as the proxy saw it: when it arrived (Date.now() ms), its method (`batch` for a batch), its calls, and what it got. */
export type ProviderEvent = {
  at: number;
  method: string;
  calls: number;
  outcome: "served" | "rate_limited" | "range" | "results";
  retryAfterMs?: number;
};

type Call = { jsonrpc?: string; id?: unknown; method?: string; params?: unknown[] };

/** The window the rate is counted over (ms): a sliding second. */
const RATE_WINDOW_MS = 1_000;

/**
 * A JSON-RPC proxy shaped like a hosted provider, in front of a real node (anvil): added latency, a
 * request-rate limit answered with HTTP 429 (with `Retry-After` on some refusals), a block-range cap
 * and a result cap on eth_getLogs, each refusal with the error body real endpoints send
 * (Optimism's proxyd in front of mainnet.base.org: -32016 "over rate limit" behind 429, -32602
 * "block range greater than N max" behind 400; geth-derived nodes: -32005 "query returned more than
 * N results"). Counts what it did.
 */
export async function startProviderProxy(targetUrl: string, shape: Partial<ProviderShape> = {}) {
  const s: ProviderShape = { ...DEFAULT_PROVIDER_SHAPE, ...shape };
  const counts: ProviderCounts = {
    requests: 0,
    calls: 0,
    rateLimited: 0,
    withRetryAfter: 0,
    strayRefused: 0,
    rangeRefused: 0,
    resultsRefused: 0,
    logsServed: 0,
    bytesServed: 0,
  };
  const events: ProviderEvent[] = [];
  /** When each admitted call arrived, over the last RATE_WINDOW_MS. */
  const admitted: number[] = [];

  /** Whether `calls` more calls fit in the last second; admits them when they do. */
  function admit(calls: number, now: number): boolean {
    while (admitted.length > 0 && admitted[0]! <= now - RATE_WINDOW_MS) admitted.shift();
    if (admitted.length + calls > s.requestsPerSecond) return false;
    for (let i = 0; i < calls; i++) admitted.push(now);
    return true;
  }

  async function forward(body: string): Promise<string> {
    const response = await fetch(targetUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    return response.text();
  }

  /** A refusal of one eth_getLogs for its range or result count, or undefined to serve it. */
  async function capped(
    call: Call,
  ): Promise<
    | { status: number; body: string; outcome: "range" | "results" }
    | { answer: string; logs: number }
  > {
    const filter = call.params?.[0] as { fromBlock?: unknown; toBlock?: unknown } | undefined;
    const from = Number(filter?.fromBlock);
    const to = Number(filter?.toBlock);
    if (Number.isSafeInteger(from) && Number.isSafeInteger(to) && to - from + 1 > s.maxBlockRange)
      return {
        status: 400,
        body: errorBody(call.id, -32602, `block range greater than ${s.maxBlockRange} max`),
        outcome: "range",
      };
    const answer = await forward(JSON.stringify(call));
    const logs = countLogs(answer);
    if (logs > s.maxResults)
      return {
        status: 200,
        body: errorBody(call.id, -32005, `query returned more than ${s.maxResults} results`),
        outcome: "results",
      };
    return { answer, logs };
  }

  async function answer(
    body: string,
  ): Promise<{ status: number; body: string; headers?: Record<string, string> }> {
    const parsed = JSON.parse(body) as Call | Call[];
    const calls = Array.isArray(parsed) ? parsed.length : 1;
    const method = Array.isArray(parsed) ? "batch" : String(parsed.method);
    const now = Date.now();
    counts.requests++;
    counts.calls += calls;
    if (s.strayRefusals > 0 && Math.random() < s.strayRefusals) {
      counts.rateLimited++;
      counts.strayRefused++;
      events.push({ at: now, method, calls, outcome: "rate_limited" });
      return { status: 429, body: errorBody(null, -32016, "over rate limit") };
    }
    if (!admit(calls, now)) {
      counts.rateLimited++;
      const named = counts.rateLimited % s.retryAfterEvery === 0;
      events.push({
        at: now,
        method,
        calls,
        outcome: "rate_limited",
        ...(named ? { retryAfterMs: s.retryAfterSeconds * 1_000 } : {}),
      });
      if (named) counts.withRetryAfter++;
      return {
        status: 429,
        body: errorBody(null, -32016, "over rate limit"),
        ...(named ? { headers: { "retry-after": String(s.retryAfterSeconds) } } : {}),
      };
    }
    if (!Array.isArray(parsed) && parsed.method === "eth_getLogs") {
      const outcome = await capped(parsed);
      if ("outcome" in outcome) {
        counts[outcome.outcome === "range" ? "rangeRefused" : "resultsRefused"]++;
        events.push({ at: now, method, calls, outcome: outcome.outcome });
        return outcome;
      }
      counts.logsServed += outcome.logs;
      events.push({ at: now, method, calls, outcome: "served" });
      return { status: 200, body: outcome.answer };
    }
    events.push({ at: now, method, calls, outcome: "served" });
    return { status: 200, body: await forward(body) };
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const started = Date.now();
      answer(Buffer.concat(chunks).toString("utf8"))
        .then(async (reply) => {
          const wait = s.latencyMs - (Date.now() - started);
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          counts.bytesServed += Buffer.byteLength(reply.body);
          res
            .writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
            .end(reply.body);
        })
        .catch(() => res.writeHead(502, { "content-type": "text/plain" }).end("Bad Gateway"));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    shape: s,
    counts,
    events,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type ProviderProxy = Awaited<ReturnType<typeof startProviderProxy>>;

/**
 * The logs in a node's eth_getLogs answer: one `"logIndex"` key each. A scan, not JSON.parse: parsing
 * megabytes held the proxy's event loop for tens of milliseconds, stamping the requests that arrived
 * meanwhile late, as no provider's rate limiter does.
 */
function countLogs(answer: string): number {
  let logs = 0;
  for (
    let at = answer.indexOf(LOG_KEY);
    at !== -1;
    at = answer.indexOf(LOG_KEY, at + LOG_KEY.length)
  )
    logs++;
  return logs;
}
const LOG_KEY = '"logIndex"';

const errorBody = (id: unknown, code: number, message: string): string =>
  JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } });
