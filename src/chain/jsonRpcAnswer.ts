import { isRetryableRpcError, RpcRequestError, RpcResponseError } from "../errors/rpc.js";

/** One call's outcome in a batch: its result, or the node's error for it when retrying cannot change it. */
export type BatchResult = { ok: true; result: unknown } | { ok: false; error: RpcRequestError };

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
export function unwrap(
  answer: unknown,
  method: string,
  id: number | undefined,
  label: string,
): unknown {
  if (typeof answer !== "object" || answer === null)
    throw new RpcResponseError(`${label} answered ${method} with a non-object`);
  const error = nodeErrorOf(answer);
  if (error !== undefined) throw new RpcRequestError(method, error);
  const response = answer as { id?: unknown; result?: unknown };
  if (id !== undefined && response.id !== id)
    throw new RpcResponseError(
      `${label} answered ${method} with id ${String(response.id)}, expected ${id}`,
    );
  if (!("result" in response))
    throw new RpcResponseError(`${label} answered ${method} without a result`);
  return response.result;
}

/**
 * The outcome of each call of a batch whose ids run from `firstId`, in the calls' order. A node's
 * error for the whole batch (too large, not supported), a missing answer or another id throws; so
 * does a call's error that a retry may cure (the whole batch is asked again). Any other error of a
 * call comes back as its value.
 */
export function batchResults(
  answer: unknown,
  methods: readonly string[],
  firstId: number,
  label: string,
): BatchResult[] {
  if (!Array.isArray(answer)) {
    unwrap(answer, "batch", undefined, label);
    throw new RpcResponseError(`${label} answered a batch with a non-array`);
  }
  const byId = new Map<unknown, unknown>(
    answer.map((item) => [(item as { id?: unknown } | null)?.id, item]),
  );
  return methods.map((method, i): BatchResult => {
    const item = byId.get(firstId + i);
    if (item === undefined)
      throw new RpcResponseError(`${label} left call ${i} (${method}) of a batch unanswered`);
    try {
      return { ok: true, result: unwrap(item, method, firstId + i, label) };
    } catch (error) {
      if (error instanceof RpcRequestError && !isRetryableRpcError(error))
        return { ok: false, error };
      throw error;
    }
  });
}
