import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterEach, describe, expect, test } from "vitest";
import { WebSocketServer } from "ws";
import { createWsSubscription } from "../../src/chain/wsSubscription.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createShutdown } from "../../src/ops/shutdown.js";
import { waitFor } from "../helpers/fixtures.js";

/**
 * A node that answers the subscription, sends one notification, then falls silent. With
 * `autoPong: false` it stops answering pings too: a connection dropped on the way without a close.
 */
async function startSilentNode(options: { answersPings: boolean }) {
  const server = new WebSocketServer({
    host: "127.0.0.1",
    port: 0,
    autoPong: options.answersPings,
  });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  let connections = 0;
  server.on("connection", (socket) => {
    connections++;
    socket.on("message", () => {
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0xs" }));
      socket.send(
        JSON.stringify({
          jsonrpc: "2.0",
          method: "eth_subscription",
          params: { subscription: "0xs", result: { n: connections } },
        }),
      );
    });
  });
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function subscribe(url: string) {
  const shutdown = createShutdown();
  const notifications: unknown[] = [];
  const subscribed: boolean[] = [];
  createWsSubscription(
    {
      logger: pino({ level: "silent" }),
      metrics: createMetrics({ defaultMetrics: false }),
      shutdown,
    },
    {
      url,
      name: "newHeads",
      params: ["newHeads"],
      initialDelayMs: 10,
      maxDelayMs: 50,
      pingAfterMs: 100,
      pongTimeoutMs: 100,
      onNotification: (result) => notifications.push(result),
      onSubscribed: (reconnect) => subscribed.push(reconnect),
    },
  );
  cleanups.push(() => shutdown.kill());
  return { notifications, subscribed };
}

describe("a WebSocket subscription's liveness", () => {
  test("a connection that stops answering pings is recycled and subscribed again", async () => {
    const node = await startSilentNode({ answersPings: false });
    cleanups.push(node.stop);
    const { notifications, subscribed } = subscribe(node.url);
    await waitFor(() => subscribed.length >= 2, 10_000, "a second subscription");
    expect(subscribed.slice(0, 2)).toEqual([false, true]);
    expect(notifications.slice(0, 2)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  test("a quiet connection that answers pings is kept", async () => {
    const node = await startSilentNode({ answersPings: true });
    cleanups.push(node.stop);
    const { subscribed } = subscribe(node.url);
    await waitFor(() => subscribed.length >= 1, 10_000, "the subscription");
    // Several ping rounds (100 ms apart, 100 ms to answer) pass in this time.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(node.connections()).toBe(1);
    expect(subscribed).toEqual([false]);
  });
});

describe("a WebSocket subscription's hostile messages", () => {
  test("JSON that is not an object (null, a number, an array, a string) is counted and skipped", async () => {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const client of server.clients) client.terminate();
          server.close(() => resolve());
        }),
    );
    server.on("connection", (socket) => {
      socket.on("message", () => {
        for (const junk of ["null", "5", "[]", '"x"']) socket.send(junk);
        socket.send(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0xs" }));
        socket.send("null");
        socket.send(
          JSON.stringify({
            jsonrpc: "2.0",
            method: "eth_subscription",
            params: { subscription: "0xs", result: { n: 1 } },
          }),
        );
      });
    });
    const shutdown = createShutdown();
    cleanups.push(() => shutdown.kill());
    const metrics = createMetrics({ defaultMetrics: false });
    const notifications: unknown[] = [];
    createWsSubscription(
      { logger: pino({ level: "silent" }), metrics, shutdown },
      {
        url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
        name: "newHeads",
        params: ["newHeads"],
        initialDelayMs: 10,
        maxDelayMs: 50,
        onNotification: (result) => notifications.push(result),
      },
    );
    await waitFor(() => notifications.length >= 1, 10_000, "the notification after the junk");
    expect(notifications).toEqual([{ n: 1 }]);
    const rejected = await metrics.registry.getSingleMetricAsString(
      "flashindex_ws_messages_rejected_total",
    );
    expect(rejected).toContain('flashindex_ws_messages_rejected_total{subscription="newHeads"} 5');
  });
});
