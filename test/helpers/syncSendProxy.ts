import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { RpcRequest } from "./rewritingRpcProxy.js";

/** How the proxy treats eth_sendRawTransactionSync. */
export type SyncMode =
  /** Passed on to the devnet, whose front serves it with Base's semantics. */
  | "serve"
  /** Answered -32601 with geth's words, as an endpoint without the method does. */
  | "methodNotFound"
  /** The connection cut before any answer: a transport failure, no verdict on the method. */
  | "cutConnection";

const SYNC = "eth_sendRawTransactionSync";

/**
 * An HTTP JSON-RPC endpoint in front of the devnet that counts every call by method (batches
 * included), counts the sync sends still waiting for their answer, and plays an endpoint with or
 * without eth_sendRawTransactionSync (`mode`). `rewrite` changes a request before it is passed on.
 */
export async function startSyncSendProxy(
  target: string,
  rewrite: (request: RpcRequest) => RpcRequest = (request) => request,
) {
  const calls = new Map<string, number>();
  const state = { mode: "serve" as SyncMode, syncInFlight: 0, syncRefused: 0, syncCut: 0 };
  const count = (method: string | undefined) =>
    calls.set(method ?? "?", (calls.get(method ?? "?") ?? 0) + 1);

  const server: Server = createServer((incoming, outgoing) => {
    let body = "";
    incoming.on("data", (chunk: Buffer) => (body += chunk.toString()));
    incoming.on("end", () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body) as unknown;
      } catch {
        outgoing.writeHead(400).end();
        return;
      }
      const requests = (Array.isArray(parsed) ? parsed : [parsed]) as Array<
        RpcRequest & { id?: unknown }
      >;
      for (const request of requests) count(request.method);
      const sync = !Array.isArray(parsed) && requests[0]?.method === SYNC;
      if (sync && state.mode === "methodNotFound") {
        state.syncRefused++;
        const error = {
          code: -32601,
          message: `the method ${SYNC} does not exist/is not available`,
        };
        outgoing
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: requests[0]!.id ?? null, error }));
        return;
      }
      if (sync && state.mode === "cutConnection") {
        state.syncCut++;
        incoming.socket.destroy();
        return;
      }
      if (sync) state.syncInFlight++;
      const forwarded = Array.isArray(parsed) ? requests.map(rewrite) : rewrite(requests[0]!);
      void fetch(target, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(forwarded),
      })
        .then((r) => r.text())
        .then(
          (text) => outgoing.writeHead(200, { "content-type": "application/json" }).end(text),
          () => outgoing.writeHead(502).end(),
        )
        .finally(() => {
          if (sync) state.syncInFlight--;
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    /** Calls of `method` the proxy received so far (a batch's calls each count). */
    calls: (method: string) => calls.get(method) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
