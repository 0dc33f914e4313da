import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { createHealth } from "../../src/ops/health.js";
import {
  OPS_HEADERS_TIMEOUT_MS,
  OPS_MAX_CONNECTIONS,
  OPS_REQUEST_TIMEOUT_MS,
  startOpsServer,
  type OpsServerLimits,
} from "../../src/ops/httpServer.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createMemoryLogger } from "../helpers/context.js";

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function server(options: { statusPage?: boolean; limits?: OpsServerLimits } = {}) {
  const started = await startOpsServer(
    { logger: createMemoryLogger().logger, metrics: createMetrics(), health: createHealth() },
    { host: "127.0.0.1", port: 0, ...options },
  );
  open.push(() => started.close());
  return started;
}

/** A raw TCP connection to the server (closed after the test), and what the server sent before it closed it. */
async function socketTo(url: string): Promise<{ socket: Socket; closed: Promise<string> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  open.push(() => void socket.destroy());
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
  const closed = new Promise<string>((resolve) => socket.once("close", () => resolve(received)));
  await new Promise<void>((resolve, reject) =>
    socket.once("connect", resolve).once("error", reject),
  );
  return { socket, closed };
}

describe("the ops server's limits on clients", () => {
  test("the defaults are set: bounded headers and request time, and a connection cap", () => {
    expect(OPS_HEADERS_TIMEOUT_MS).toBeLessThanOrEqual(OPS_REQUEST_TIMEOUT_MS);
    expect(OPS_REQUEST_TIMEOUT_MS).toBeLessThan(300_000);
    expect(OPS_MAX_CONNECTIONS).toBeGreaterThan(0);
  });

  test("a client that sends its headers a byte at a time is cut off after the headers timeout", async () => {
    const { url } = await server({
      limits: { headersTimeoutMs: 300, requestTimeoutMs: 600, maxConnections: 8 },
    });
    const { socket, closed } = await socketTo(url);
    socket.write("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    const drip = setInterval(() => socket.writable && socket.write("X"), 50);
    open.push(() => clearInterval(drip));
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
  });

  test("connections past the cap are dropped; one freed makes room again", async () => {
    const { url } = await server({
      limits: { headersTimeoutMs: 10_000, requestTimeoutMs: 20_000, maxConnections: 2 },
    });
    const held = [await socketTo(url), await socketTo(url)];
    const extra = await socketTo(url);
    expect(await extra.closed).toBe("");
    held[0]!.socket.destroy();
    // The server counts the freed connection once it has seen it close; until then a request may be dropped or held.
    let answered: Response | undefined;
    for (let i = 0; i < 50 && answered === undefined; i++) {
      answered = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).catch(
        () => undefined,
      );
      if (answered === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(answered?.status).toBe(200);
  });
});

describe("the status page switch", () => {
  test("on (the default) / is the status page; off it is a 404 and the other endpoints stay", async () => {
    const on = await server();
    on.setStatusPage(async () => "<html>status</html>");
    expect(await (await fetch(`${on.url}/`)).text()).toBe("<html>status</html>");
    const off = await server({ statusPage: false });
    off.setStatusPage(async () => "<html>status</html>");
    expect((await fetch(`${off.url}/`)).status).toBe(404);
    expect((await fetch(`${off.url}/metrics`)).status).toBe(200);
    expect((await fetch(`${off.url}/healthz`)).status).toBe(200);
  });
});
