import { ShutdownError } from "../errors/base.js";
import { RpcResponseError, WrongChainError } from "../errors/rpc.js";
import type { Logger } from "../ops/logger.js";
import { redactUrl } from "../ops/redact.js";

/** An endpoint that failed is skipped for this long while another is healthy. */
const ENDPOINT_COOLDOWN_MS = 30_000;

/** One configured RPC URL and its label, redacted for logs, errors and metrics. */
export type RpcEndpoint = { readonly url: string; readonly label: string };

export type RpcEndpoints = {
  /**
   * The endpoint for attempt `attempt` (0 for the first): the first healthy one, rotating on
   * retries.
   */
  pick: (attempt: number) => RpcEndpoint;
  /**
   * The endpoint failed (not a rate refusal): it rests ENDPOINT_COOLDOWN_MS while another is
   * healthy.
   */
  failed: (endpoint: RpcEndpoint) => void;
  /**
   * Resolves once the endpoint's chain id is checked (once; a failed check is asked again next
   * time).
   */
  ensureVerified: (endpoint: RpcEndpoint) => Promise<void>;
  /**
   * Checks every endpoint's chain id; throws WrongChainError on a mismatch, warns on an unreachable
   * one.
   */
  verifyAll: () => Promise<void>;
};

/**
 * When an endpoint last failed (Date.now() ms, 0 if never) and its chain-id check, once started.
 */
type Health = { failedAt: number; verified: Promise<void> | undefined };

/**
 * The client's endpoints: failover (a failed endpoint is skipped while another is healthy) and
 * verification (before an endpoint's first use its chain id is checked against `chainId`;
 * `askChainId` sends it eth_chainId and returns the answer's result, unchecked).
 */
export function createRpcEndpoints(deps: {
  urls: readonly string[];
  chainId: number;
  logger: Logger;
  askChainId: (endpoint: RpcEndpoint) => Promise<unknown>;
}): RpcEndpoints {
  const { chainId, logger } = deps;
  const endpoints: RpcEndpoint[] = deps.urls.map((url) => ({ url, label: redactUrl(url) }));
  const health = new Map<RpcEndpoint, Health>(
    endpoints.map((endpoint) => [endpoint, { failedAt: 0, verified: undefined }]),
  );
  const healthOf = (endpoint: RpcEndpoint): Health => health.get(endpoint)!;

  function ensureVerified(endpoint: RpcEndpoint): Promise<void> {
    const state = healthOf(endpoint);
    state.verified ??= (async () => {
      const answer = await deps.askChainId(endpoint);
      if (typeof answer !== "string" || !/^0x[0-9a-fA-F]+$/.test(answer))
        throw new RpcResponseError(
          `${endpoint.label} answered eth_chainId with ${JSON.stringify(answer)}`,
        );
      const served = Number.parseInt(answer, 16);
      if (served !== chainId)
        throw new WrongChainError(
          `${endpoint.label} serves chain ${served}, but the config says chainId ${chainId}`,
        );
    })().catch((error: unknown) => {
      // Forget a failed check so the next use checks again; a wrong chain stays fatal anyway.
      state.verified = undefined;
      throw error;
    });
    return state.verified;
  }

  return {
    pick: (attempt) => {
      const now = Date.now();
      const healthy = endpoints.filter((e) => now - healthOf(e).failedAt > ENDPOINT_COOLDOWN_MS);
      const pool = healthy.length > 0 ? healthy : endpoints;
      // Prefer the first healthy endpoint; on retries rotate so one bad endpoint cannot exhaust
      // every attempt.
      return pool[attempt % pool.length]!;
    },

    failed: (endpoint) => {
      healthOf(endpoint).failedAt = Date.now();
    },

    ensureVerified,

    verifyAll: async () => {
      for (const endpoint of endpoints) {
        try {
          await ensureVerified(endpoint);
        } catch (error) {
          if (error instanceof WrongChainError || error instanceof ShutdownError) throw error;
          logger.warn({
            msg: "Could not verify RPC endpoint",
            endpoint: endpoint.label,
            error: (error as Error).message,
          });
        }
      }
    },
  };
}
