import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type RpcRequest = { id: unknown; method: string; params: unknown[] };
/** Answers one request: a JSON-RPC result, an error, or raw HTTP. */
export type Reply =
  | { result: unknown }
  | { error: { code: number; message: string; data?: unknown } }
  | { http: number; body?: string; headers?: Record<string, string> };

/**
 * A real HTTP JSON-RPC server whose answers a test scripts, for failures anvil cannot produce
 * (503s, garbage bodies, provider error messages). Records every request it gets.
 */
export async function startScriptedRpcServer(
  answer: (request: RpcRequest) => Reply | Promise<Reply>,
) {
  const requests: RpcRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    // void: a rejection here is a bug in the test, and vitest fails the run on an unhandled rejection.
    req.on(
      "end",
      () =>
        void (async () => {
          const parsed = JSON.parse(body) as RpcRequest | RpcRequest[];
          const batch = Array.isArray(parsed) ? parsed : [parsed];
          const replies: unknown[] = [];
          for (const request of batch) {
            requests.push(request);
            const reply = await answer(request);
            if ("http" in reply) {
              res
                .writeHead(reply.http, { "content-type": "application/json", ...reply.headers })
                .end(reply.body ?? "");
              return;
            }
            replies.push({ jsonrpc: "2.0", id: request.id, ...reply });
          }
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify(Array.isArray(parsed) ? replies : replies[0]));
        })(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
