import type { WebSocket } from "ws";
import type { CanonicalWatcher } from "./canonicalWatcher.js";
import {
  errorAnswer,
  RpcError,
  type Answer,
  type Answered,
  type MethodTable,
  type Request,
} from "./jsonRpc.js";
import { UpstreamError, type Upstream } from "./upstream.js";

export type MethodRouterDeps = {
  /** The methods the front answers itself; any other is forwarded to anvil. */
  methods: MethodTable;
  upstream: Upstream;
  watcher: CanonicalWatcher;
  reportError: (error: unknown) => void;
};

/**
 * Whether `method` changes anvil's head when called on it directly: the watcher looks at the head
 * after it.
 */
const changesHead = (method: string): boolean =>
  method === "evm_mine" ||
  method === "anvil_mine" ||
  method.startsWith("anvil_reorg") ||
  method === "anvil_rollback" ||
  method === "evm_revert";

/**
 * Turns a request body (one JSON-RPC request or a batch) into the answer text: each request goes to
 * its handler in the method table, or to anvil. A handler's RpcError or anvil's own error is
 * answered as is; anything else is reported and answered -32603.
 */
export function createMethodRouter({ methods, upstream, watcher, reportError }: MethodRouterDeps) {
  async function route(
    request: Request,
    socket: WebSocket | undefined,
  ): Promise<Answer | Answered> {
    const params = Array.isArray(request.params) ? request.params : [];
    try {
      if (typeof request.method !== "string") throw new RpcError(-32600, "invalid request");
      const method = request.method;
      const handler = Object.hasOwn(methods, method) ? methods[method] : undefined;
      if (handler !== undefined) return await handler({ request, params, socket });
      const answer = (await upstream.forward(request)) as Answer;
      if (changesHead(method)) void watcher.sync().catch(reportError);
      return answer;
    } catch (error) {
      if (error instanceof RpcError || error instanceof UpstreamError)
        return errorAnswer(request, error.code, error.message);
      reportError(error);
      return errorAnswer(request, -32603, (error as Error).message);
    }
  }

  async function handle(request: Request, socket: WebSocket | undefined): Promise<Answered> {
    const answered = await route(request, socket);
    return "httpStatus" in answered ? answered : { answer: answered, httpStatus: 200 };
  }

  return {
    /**
     * The answer to `body` and its HTTP status (200 unless a lone HTTP request met a fault answered
     * with another).
     */
    answerBody: async (
      body: string,
      socket: WebSocket | undefined,
    ): Promise<{ text: string; httpStatus: number }> => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return {
          text: JSON.stringify(errorAnswer({ id: null }, -32700, "parse error")),
          httpStatus: 200,
        };
      }
      if (Array.isArray(parsed)) {
        const answers = await Promise.all(parsed.map((r) => handle(r as Request, socket)));
        return { text: JSON.stringify(answers.map((a) => a.answer)), httpStatus: 200 };
      }
      const { answer, httpStatus } = await handle(parsed as Request, socket);
      return { text: JSON.stringify(answer), httpStatus: socket === undefined ? httpStatus : 200 };
    },
  };
}

export type MethodRouter = ReturnType<typeof createMethodRouter>;
