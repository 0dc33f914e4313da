import type { Hex } from "viem";
import type { BlockHeader } from "../../chain/blockHeaders.js";
import type { RpcClient } from "../../chain/rpcClient.js";
import type { LogRow, LogStatus } from "../../rows/logRow.js";
import { fetchLogRows } from "../fetchLogRows.js";
import { PAYMENT_TOPICS } from "../../rows/paymentEvents.js";
import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { MemberSelection } from "../watchScope.js";

const isTokenList = (tokens: readonly Hex[] | MemberSelection): tokens is readonly Hex[] =>
  Array.isArray(tokens);

/**
 * The decoded logs of one canonical block, fetched by its hash so they cannot belong to a sibling.
 * Strict: rows come only from an answer in which every log passed, so a damaged answer can neither
 * lose a real log nor make its pre-confirmed twin look dropped.
 */
export async function getBlockRows(
  deps: {
    client: RpcClient;
    logger: Logger;
    metrics: Metrics;
    chainId: number;
    tokens: readonly Hex[] | MemberSelection;
  },
  block: BlockHeader,
  status: LogStatus,
): Promise<LogRow[]> {
  // Token addresses read whole, or a selection (watched tokens: watchScope.ts).
  const selection: MemberSelection = isTokenList(deps.tokens)
    ? { addresses: deps.tokens, topic0: PAYMENT_TOPICS }
    : deps.tokens;
  if (selection.addresses.length === 0 && (selection.watched?.length ?? 0) === 0) return [];
  return fetchLogRows(
    deps,
    { blockHash: block.hash, blockNumber: block.number, ...selection },
    { statusOf: () => status, source: "head", timestampOf: () => block.timestamp, strict: true },
  );
}
