import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";

export type ChaosOptions = {
  /** Share of HTTP requests answered 503. */
  errorRate: number;
  /** Share of HTTP requests refused with HTTP 429 at random, whatever the rate (a provider's stray refusals); default none. */
  rateLimitRate?: number;
  /** Share of HTTP requests that hang for `hangMs` before the connection is cut. */
  hangRate: number;
  hangMs: number;
  /** Share of eth_getLogs-by-block-hash answers with logs in which one log loses a topic. */
  damageRate: number;
  /** WebSocket clients are cut off at a random moment in this range (ms), again and again. */
  wsDropEveryMs: [number, number];
};

/**
 * A misbehaving provider in front of a real endpoint (HTTP and WebSocket on one port): 503s, stray 429s, requests
 * that hang, damaged eth_getLogs answers for head blocks, and WebSocket connections cut every few
 * seconds. Counts what it did, so a test can show the faults really happened.
 */
export async function startChaosProxy(
  target: { httpUrl: string; wsUrl: string },
  options: ChaosOptions,
) {
  const done = { errors: 0, rateLimited: 0, hangs: 0, damaged: 0, wsDrops: 0 };
  const rateLimitRate = options.rateLimitRate ?? 0;
  const sockets = new Set<WebSocket>();
  let closed = false;
  /** Faults start only when enabled (e.g. once the follower has caught up). */
  let enabled = false;

  async function forward(body: string): Promise<string> {
    const response = await fetch(target.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    return response.text();
  }

  /** Replaces one log of a by-hash eth_getLogs answer with a copy missing its last topic. */
  function maybeDamage(body: string, text: string): string {
    const request = JSON.parse(body) as { method?: string; params?: Array<{ blockHash?: string }> };
    if (request.method !== "eth_getLogs" || request.params?.[0]?.blockHash === undefined)
      return text;
    const answer = JSON.parse(text) as { result?: Array<{ topics: string[] }> };
    if (
      !enabled ||
      !Array.isArray(answer.result) ||
      answer.result.length === 0 ||
      Math.random() >= options.damageRate
    )
      return text;
    const at = Math.floor(Math.random() * answer.result.length);
    answer.result[at] = { ...answer.result[at]!, topics: answer.result[at]!.topics.slice(0, -1) };
    done.damaged++;
    return JSON.stringify(answer);
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    // void: a rejection here is a bug in the test, and vitest fails the run on an unhandled rejection.
    req.on(
      "end",
      () =>
        void (async () => {
          const roll = enabled ? Math.random() : 1;
          if (roll < options.errorRate) {
            done.errors++;
            return void res.writeHead(503).end("Service Unavailable");
          }
          if (roll < options.errorRate + rateLimitRate) {
            done.rateLimited++;
            const refusal = JSON.stringify({
              jsonrpc: "2.0",
              id: null,
              error: { code: -32016, message: "over rate limit" },
            });
            return void res.writeHead(429, { "content-type": "application/json" }).end(refusal);
          }
          if (roll < options.errorRate + rateLimitRate + options.hangRate) {
            done.hangs++;
            const timer = setTimeout(() => res.destroy(), options.hangMs);
            res.on("close", () => clearTimeout(timer));
            return;
          }
          try {
            const text = maybeDamage(body, await forward(body));
            res.writeHead(200, { "content-type": "application/json" }).end(text);
          } catch {
            res.destroy();
          }
        })(),
    );
  });

  const wss = new WebSocketServer({ server });
  wss.on("connection", (client) => {
    const upstream = new WebSocket(target.wsUrl);
    const queued: string[] = [];
    sockets.add(client);
    upstream.on("open", () => {
      for (const message of queued.splice(0)) upstream.send(message);
    });
    upstream.on(
      "message",
      (data: Buffer) => client.readyState === WebSocket.OPEN && client.send(data.toString()),
    );
    client.on("message", (data: Buffer) =>
      upstream.readyState === WebSocket.OPEN
        ? upstream.send(data.toString())
        : queued.push(data.toString()),
    );
    const closeBoth = () => {
      sockets.delete(client);
      client.terminate();
      upstream.terminate();
    };
    client.on("close", closeBoth);
    upstream.on("close", closeBoth);
    client.on("error", closeBoth);
    upstream.on("error", closeBoth);
  });

  let dropTimer: NodeJS.Timeout | undefined;
  const scheduleDrop = () => {
    const [min, max] = options.wsDropEveryMs;
    dropTimer = setTimeout(
      () => {
        if (closed) return;
        if (enabled && sockets.size > 0) {
          done.wsDrops++;
          for (const socket of sockets) socket.terminate();
        }
        scheduleDrop();
      },
      min + Math.random() * (max - min),
    );
  };
  scheduleDrop();

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    done,
    enable: () => {
      enabled = true;
    },
    stop: async () => {
      closed = true;
      clearTimeout(dropTimer);
      for (const socket of sockets) socket.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
