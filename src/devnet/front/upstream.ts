/** A minimal JSON-RPC client for the anvil behind the front (no retries: anvil is local and either answers or is gone). */
export type Upstream = {
  call: <T = unknown>(method: string, params?: unknown[]) => Promise<T>;
  /** Forwards a raw JSON-RPC request object and returns anvil's whole response object. */
  forward: (request: unknown) => Promise<unknown>;
};

export class UpstreamError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function createUpstream(url: string): Upstream {
  let id = 0;
  async function post(body: unknown): Promise<unknown> {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return response.json();
  }
  return {
    async call<T>(method: string, params: unknown[] = []): Promise<T> {
      const answer = (await post({ jsonrpc: "2.0", id: ++id, method, params })) as {
        result?: T;
        error?: { code: number; message: string; data?: unknown };
      };
      if (answer.error !== undefined)
        throw new UpstreamError(answer.error.code, answer.error.message, answer.error.data);
      return answer.result as T;
    },
    forward: post,
  };
}
