import WebSocket from "ws";

/** A JSON-RPC error answer, kept whole so tests can assert on code and message. */
export class RpcAnswerError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Notifications of one eth_subscribe, in arrival order. */
export type TestSubscription = {
  id: string;
  results: unknown[];
  /** Resolves once `done(results)` holds; rejects after `timeoutMs` with what arrived so far. */
  waitFor: (done: (results: unknown[]) => boolean, timeoutMs?: number) => Promise<unknown[]>;
};

const WAIT_TIMEOUT_MS = 5_000;

/**
 * A WebSocket JSON-RPC client for tests: requests by id, subscriptions that collect their
 * notifications, and the close event as a promise. A server writes notifications and answers to
 * one socket in order, so `barrier()` (a round trip after an event) proves every notification that
 * event caused has arrived.
 */
export async function connectWsRpc(url: string) {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  let nextId = 0;
  const waiting = new Map<
    number,
    { resolve: (result: unknown) => void; reject: (error: Error) => void }
  >();
  const bySubscription = new Map<string, unknown[]>();
  /** Every notification of every subscription, in arrival order. */
  const notifications: Array<{ subscription: string; result: unknown }> = [];
  const listeners = new Set<() => void>();
  const closed = new Promise<{ code: number }>((resolve) =>
    socket.once("close", (code: number) => {
      for (const { reject } of waiting.values()) reject(new Error(`socket closed (${code})`));
      waiting.clear();
      for (const listener of listeners) listener();
      resolve({ code });
    }),
  );
  socket.on("error", () => undefined);

  socket.on("message", (data: Buffer) => {
    const message = JSON.parse(data.toString()) as {
      id?: number;
      result?: unknown;
      error?: { code: number; message: string };
      method?: string;
      params?: { subscription: string; result: unknown };
    };
    if (message.method === "eth_subscription" && message.params !== undefined) {
      resultsOf(message.params.subscription).push(message.params.result);
      notifications.push(message.params);
      for (const listener of listeners) listener();
      return;
    }
    const pending = typeof message.id === "number" ? waiting.get(message.id) : undefined;
    if (pending === undefined) return;
    waiting.delete(message.id!);
    if (message.error !== undefined)
      pending.reject(new RpcAnswerError(message.error.code, message.error.message));
    else pending.resolve(message.result);
  });

  function resultsOf(id: string): unknown[] {
    let results = bySubscription.get(id);
    if (results === undefined) bySubscription.set(id, (results = []));
    return results;
  }

  function request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const id = ++nextId;
    return new Promise<T>((resolve, reject) => {
      // ws drops a send on a closed socket silently; a test waiting for its answer would hang.
      if (socket.readyState !== WebSocket.OPEN)
        return reject(new Error(`socket not open (state ${socket.readyState})`));
      waiting.set(id, { resolve: resolve as (result: unknown) => void, reject });
      socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  async function subscribe(...params: unknown[]): Promise<TestSubscription> {
    const id = await request<string>("eth_subscribe", params);
    const results = resultsOf(id);
    const waitFor = (done: (results: unknown[]) => boolean, timeoutMs = WAIT_TIMEOUT_MS) =>
      new Promise<unknown[]>((resolve, reject) => {
        const check = () => {
          if (!done(results)) return false;
          cleanup();
          resolve(results);
          return true;
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `subscription ${id} timed out with ${results.length} notifications: ${JSON.stringify(results).slice(0, 2_000)}`,
            ),
          );
        }, timeoutMs);
        const listener = () => void check();
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(listener);
        };
        listeners.add(listener);
        check();
      });
    return { id, results, waitFor };
  }

  return {
    request,
    subscribe,
    notifications,
    /** A round trip on this socket: every notification sent before it has arrived when it resolves. */
    barrier: () => request("eth_chainId"),
    closed,
    close: async () => {
      socket.close();
      await closed;
    },
  };
}

export type WsRpcClient = Awaited<ReturnType<typeof connectWsRpc>>;
