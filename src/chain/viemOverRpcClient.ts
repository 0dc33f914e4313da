import { createPublicClient, custom, type PublicClient } from "viem";
import { BaseError, FatalError, walkCauses } from "../errors/base.js";
import type { RpcClient } from "./rpcClient.js";

/**
 * viem actions (readContract, getCode, …) run over the project's RpcClient through viem's `custom`
 * transport, so they get its failover, retries, rate limit, metrics and URL redaction; viem's own
 * retries are off (the client has retried already). Errors come back as the client's own (the
 * exit code follows from them), not wrapped in viem's; what viem itself refuses is a FatalError.
 */
export async function withViem<T>(
  client: RpcClient,
  run: (viem: PublicClient) => Promise<T>,
): Promise<T> {
  const viem = createPublicClient({
    transport: custom(
      {
        request: ({ method, params }: { method: string; params?: unknown }) =>
          client.request(method, (params as readonly unknown[] | undefined) ?? []),
      },
      { retryCount: 0 },
    ),
  });
  try {
    return await run(viem);
  } catch (error) {
    // The first of the project's errors in a viem error's cause chain.
    const own = walkCauses(error, (e) => e instanceof BaseError);
    if (own !== undefined) throw own;
    // viem's own refusals (an answer it cannot decode, "0x" from an address without code): retrying cannot help.
    const short = (error as { shortMessage?: unknown }).shortMessage;
    throw new FatalError(typeof short === "string" ? short : String(error), { cause: error });
  }
}
