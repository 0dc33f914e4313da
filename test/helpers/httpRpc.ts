import { RpcAnswerError } from "./wsRpcClient.js";

/**
 * One JSON-RPC call over plain HTTP, so a test sees the raw objects a node (the devnet's front)
 * serves: the result, or the node's error as RpcAnswerError with its code.
 */
export async function httpRpc<T = unknown>(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<T> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { code: number; message: string } };
  if (body.error !== undefined) throw new RpcAnswerError(body.error.code, body.error.message);
  return body.result as T;
}
