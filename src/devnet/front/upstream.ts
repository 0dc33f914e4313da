import { postJson, readAnswer } from "../../chain/httpPost.js";

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

/** Longest answer read from anvil (bytes): a whole pool or block at the devnet's load is a few MB. */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/**
 * Over the daemon's own HTTP client (chain/httpPost.ts), not `fetch`: the front asks anvil several
 * times per transaction (its admission, a trace, the pending calls), and fetch cost about twice
 * the wall time and three times the CPU per call (`front-http-not-fetch` in
 * scripts/bench/results/measurements.csv).
 */
export function createUpstream(url: string): Upstream {
  let id = 0;
  async function post(body: unknown): Promise<unknown> {
    const response = await postJson(url, JSON.stringify(body));
    const { bytes, truncated } = await readAnswer(response, MAX_ANSWER_BYTES);
    if (truncated) throw new Error(`anvil's answer is longer than ${MAX_ANSWER_BYTES} bytes`);
    return JSON.parse(bytes.toString("utf8"));
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
