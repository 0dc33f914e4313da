import { BatchOverRateError } from "../errors/rpc.js";
import type { RpcClient } from "./rpcClient.js";

/**
 * Sends `items` in JSON-RPC batches of at most `maxCalls` calls, and no more than the client's rate
 * allows in one batch now (`client.batchCalls()`), in order; returns each batch's result. A batch
 * the provider refused for its rate (BatchOverRateError) is sent again in smaller pieces: the
 * refusal lowered what the client allows.
 */
export async function inBatches<I, R>(
  client: RpcClient,
  items: readonly I[],
  maxCalls: number,
  send: (batch: I[]) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length;) {
    const batch = items.slice(start, start + Math.max(1, Math.min(maxCalls, client.batchCalls())));
    try {
      results.push(await send(batch));
    } catch (error) {
      if (error instanceof BatchOverRateError && batch.length > 1) continue;
      throw error;
    }
    start += batch.length;
  }
  return results;
}
