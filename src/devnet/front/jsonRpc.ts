import type { WebSocket } from "ws";

/** A JSON-RPC request as it arrives: every field is unchecked. */
export type Request = { jsonrpc?: string; id?: unknown; method?: unknown; params?: unknown };
export type Answer = {
  jsonrpc: "2.0";
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
};
/**
 * An answer and its HTTP status; only a lone (non-batch) HTTP request travels with a status other
 * than 200.
 */
export type Answered = { answer: Answer; httpStatus: number };

/**
 * One call of a method: the request, its params (always an array) and the WebSocket it came on
 * (undefined: HTTP).
 */
export type MethodCall = { request: Request; params: unknown[]; socket: WebSocket | undefined };
export type MethodHandler = (call: MethodCall) => Promise<Answer | Answered>;
/** The methods the front answers itself, by JSON-RPC method name; any other goes to anvil. */
export type MethodTable = Record<string, MethodHandler>;

/** An error answered to the caller as is, with its JSON-RPC code. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The answer that carries `result`. */
export function ok(request: Request, result: unknown): Answer {
  return { jsonrpc: "2.0", id: request.id ?? null, result };
}

/** The answer that carries an error. */
export function errorAnswer(request: Request, code: number, message: string): Answer {
  return { jsonrpc: "2.0", id: request.id ?? null, error: { code, message } };
}

/** A table of handlers that take the params and return the result, as a MethodTable. */
export function answeringResults(
  handlers: Record<string, (params: unknown[]) => Promise<unknown>>,
): MethodTable {
  return Object.fromEntries(
    Object.entries(handlers).map(([method, handler]): [string, MethodHandler] => [
      method,
      async ({ request, params }) => ok(request, await handler(params)),
    ]),
  );
}
