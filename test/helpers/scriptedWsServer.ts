import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/**
 * A real WebSocket JSON-RPC endpoint whose subscriptions a test drives: it accepts eth_subscribe
 * and sends notifications only when told to, e.g. a `removed: true` log anvil never sends.
 */
export async function startScriptedWsServer() {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const subscriptions: Array<{ socket: WebSocket; id: string; kind: string }> = [];
  wss.on("connection", (socket) => {
    socket.on("message", (data: Buffer) => {
      const request = JSON.parse(data.toString()) as {
        id: number;
        method: string;
        params: unknown[];
      };
      if (request.method !== "eth_subscribe") return;
      const id = `0x${(subscriptions.length + 1).toString(16)}`;
      subscriptions.push({ socket, id, kind: String(request.params[0]) });
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: id }));
    });
  });
  const { port } = wss.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    subscribed: (kind: string) => subscriptions.some((s) => s.kind === kind),
    /** Sends `result` to every subscription of `kind`. */
    notify(kind: string, result: unknown): void {
      for (const s of subscriptions.filter((sub) => sub.kind === kind))
        s.socket.send(
          JSON.stringify({
            jsonrpc: "2.0",
            method: "eth_subscription",
            params: { subscription: s.id, result },
          }),
        );
    },
    /** Sends raw text (for garbage-message tests). */
    sendRaw(text: string): void {
      for (const client of wss.clients) client.send(text);
    },
    stop: () => new Promise<void>((resolve) => wss.close(() => resolve())),
  };
}
