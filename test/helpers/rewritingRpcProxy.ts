import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A JSON-RPC request as the proxy hands it to `rewrite`. */
export type RpcRequest = { method?: string; params?: unknown[] };

/**
 * An HTTP JSON-RPC endpoint in front of `target` that passes every request (single or batch)
 * through `rewrite` first: how a test makes the devnet answer as another node does (block tags a
 * node reads differently). Answers pass back unchanged.
 */
export async function startRewritingRpcProxy(
  target: string,
  rewrite: (request: RpcRequest) => RpcRequest,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((incoming, outgoing) => {
    let body = "";
    incoming.on("data", (chunk: Buffer) => (body += chunk.toString()));
    incoming.on("end", () => {
      let forwarded: unknown;
      try {
        const parsed = JSON.parse(body) as unknown;
        forwarded = Array.isArray(parsed)
          ? parsed.map((r) => rewrite(r as RpcRequest))
          : rewrite(parsed as RpcRequest);
      } catch {
        outgoing.writeHead(400).end();
        return;
      }
      void fetch(target, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(forwarded),
      })
        .then((r) => r.text())
        .then(
          (text) => outgoing.writeHead(200, { "content-type": "application/json" }).end(text),
          () => outgoing.writeHead(502).end(),
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Note: geth and reth run eth_estimateGas without a block tag at `latest`; anvil at its pending
 * block. This makes the devnet do as they do.
 */
export function untaggedEstimateAtLatest(request: RpcRequest): RpcRequest {
  return request.method === "eth_estimateGas" && request.params?.length === 1
    ? { ...request, params: [request.params[0], "latest"] }
    : request;
}
