import { RpcRequestError, RpcResponseError } from "../errors/rpc.js";

/** A node's JSON-RPC error, as it sent it (code -32603 when it sent none). */
export type NodeError = { code: number; message: string; data: unknown };

/** The error a JSON-RPC response carries, if any. */
export function nodeErrorOf(answer: unknown): NodeError | undefined {
  const error = (answer as { error?: unknown } | null)?.error;
  if (error === undefined || error === null) return undefined;
  const fields = error as { code?: unknown; message?: unknown; data?: unknown };
  return {
    code: typeof fields.code === "number" ? fields.code : -32603,
    message: typeof fields.message === "string" ? fields.message : JSON.stringify(error),
    data: fields.data,
  };
}

/** The `result` of a JSON-RPC response, or the node's error as RpcRequestError. */
export function unwrap(answer: unknown, method: string, id: number | undefined, label: string): unknown {
  if (typeof answer !== "object" || answer === null) throw new RpcResponseError(`${label} answered ${method} with a non-object`);
  const error = nodeErrorOf(answer);
  if (error !== undefined) throw new RpcRequestError(method, error);
  const response = answer as { id?: unknown; result?: unknown };
  if (id !== undefined && response.id !== id) throw new RpcResponseError(`${label} answered ${method} with id ${String(response.id)}, expected ${id}`);
  if (!("result" in response)) throw new RpcResponseError(`${label} answered ${method} without a result`);
  return response.result;
}
