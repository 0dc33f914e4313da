import { injectedHttpFailure, isPendingRead, pendingRateLimitAnswer } from "./faults.js";
import type { FrontState } from "./frontParts.js";
import type { HttpRefusal } from "./rpcServer.js";

/**
 * The faults a provider shows at the HTTP level, before any JSON-RPC answer: latency, a rate limit
 * on reads of the pending view (counted in `state.pendingReads`), failed requests. Admin calls
 * (`devnet_*`) pass untouched.
 */
export function createHttpFaults(
  state: FrontState,
): (body: string) => Promise<HttpRefusal | undefined> {
  return async (body) => {
    const isAdmin = body.includes('"devnet_');
    if (!isAdmin && state.faults.latencyMs > 0)
      await new Promise((resolve) => setTimeout(resolve, state.faults.latencyMs));
    const readsPending = !isAdmin && isPendingRead(body);
    const limited = readsPending ? pendingRateLimitAnswer(state.faults) : undefined;
    if (readsPending) state.pendingReads[limited === undefined ? "answered" : "refused"]++;
    if (limited !== undefined) return { status: 429, ...limited };
    const failure = isAdmin ? undefined : injectedHttpFailure(state.faults);
    if (failure !== undefined)
      return {
        status: failure.status,
        headers: { "content-type": "application/json" },
        body: failure.body,
      };
    return undefined;
  };
}
