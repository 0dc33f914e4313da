import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/** An HTTP answer given instead of the JSON-RPC one (an injected fault). */
export type HttpRefusal = { status: number; headers: Record<string, string>; body: string };

export type RpcServerOptions = {
  host: string;
  port: number;
  /**
   * The answer text to a request body, and its HTTP status (WebSocket messages ignore the status).
   */
  answerBody: (
    body: string,
    socket: WebSocket | undefined,
  ) => Promise<{ text: string; httpStatus: number }>;
  /** Runs before an HTTP body is answered: a refusal is sent instead of the answer. */
  beforeHttp: (body: string) => Promise<HttpRefusal | undefined>;
  /** Open WebSocket connections, kept up to date here. */
  sockets: Set<WebSocket>;
  /** A WebSocket closed (its subscriptions end). */
  onSocketClosed: (socket: WebSocket) => void;
  /** A request's answer failed (a body `answerBody` could not take): the request gets a 500. */
  reportError: (error: unknown) => void;
};

/** Serves JSON-RPC over HTTP and WebSocket on one port, as a node does; resolves once listening. */
export async function startRpcServer(options: RpcServerOptions) {
  const { sockets } = options;
  const answerHttp = async (body: string, res: ServerResponse) => {
    const refusal = await options.beforeHttp(body);
    if (refusal !== undefined)
      return void res.writeHead(refusal.status, refusal.headers).end(refusal.body);
    const { text, httpStatus } = await options.answerBody(body, undefined);
    res.writeHead(httpStatus, { "content-type": "application/json" }).end(text);
  };
  const answerSocket = async (body: string, socket: WebSocket) => {
    const { text } = await options.answerBody(body, socket);
    if (socket.readyState === 1) socket.send(text);
  };
  const server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    // A listener's rejection would be unhandled (and end the process): report it, answer 500.
    req.on(
      "end",
      () =>
        void answerHttp(body, res).catch((error: unknown) => {
          options.reportError(error);
          if (!res.headersSent) res.writeHead(500).end();
        }),
    );
  });
  const wss = new WebSocketServer({ server });
  // The WebSocket server re-emits the HTTP server's errors; listen() below reports them
  // (EADDRINUSE...).
  wss.on("error", () => undefined);
  wss.on("connection", (socket: WebSocket) => {
    sockets.add(socket);
    socket.on(
      "message",
      (data: Buffer) => void answerSocket(data.toString(), socket).catch(options.reportError),
    );
    socket.on("close", () => {
      sockets.delete(socket);
      options.onSocketClosed(socket);
    });
    socket.on("error", () => socket.terminate());
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    httpUrl: `http://${options.host}:${port}`,
    wsUrl: `ws://${options.host}:${port}`,
    /** Drops every WebSocket and stops listening. */
    close: async () => {
      for (const socket of sockets) socket.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
