import type { FrontParts } from "./frontParts.js";
import { ok, RpcError, type MethodTable } from "./jsonRpc.js";

/**
 * eth_subscribe and eth_unsubscribe, over WebSocket only: newHeads and logs (with `removed: true`
 * re-sends after reorgs) and the Flashblocks kinds pendingLogs, newFlashblocks and
 * newFlashblockTransactions (subscriptions.ts).
 */
export function createSubscriptionMethods({
  subscriptions,
}: Pick<FrontParts, "subscriptions">): MethodTable {
  return {
    eth_subscribe: async ({ request, params, socket }) => {
      if (socket === undefined) throw new RpcError(-32601, "eth_subscribe needs a WebSocket");
      try {
        return ok(request, subscriptions.subscribe(socket, params));
      } catch (error) {
        throw new RpcError(-32602, (error as Error).message);
      }
    },
    eth_unsubscribe: async ({ request, params, socket }) => {
      if (socket === undefined) throw new RpcError(-32601, "eth_unsubscribe needs a WebSocket");
      return ok(request, subscriptions.unsubscribe(socket, params[0]));
    },
  };
}
