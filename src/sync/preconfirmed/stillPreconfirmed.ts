import type { Hex } from "viem";
import { RetryableError } from "../../errors/base.js";
import type { Logger } from "../../ops/logger.js";
import { fetchLogRows, type FetchRowsDeps } from "../fetchLogRows.js";
import type { PreconfirmedBackoff } from "./preconfirmedBackoff.js";
import type { MemberSelection } from "../watchScope.js";

/**
 * Transactions among `candidates` that the pre-confirmed view holds for a block above `blockNumber`: their
 * block became canonical without them, but the node re-announced them for a later one, so they are
 * not dropped. Empty when there is nothing to ask about, or when the pre-confirmed view cannot be read
 * (then they are dropped, and revived if announced again).
 */
export async function stillPreconfirmedAbove(
  deps: FetchRowsDeps & { logger: Logger; backoff?: PreconfirmedBackoff | undefined },
  selection: MemberSelection,
  blockNumber: number,
  candidates: ReadonlySet<Hex>,
): Promise<Set<Hex>> {
  if (candidates.size === 0) return new Set();
  // A pending endpoint that asked for a pause (429 with Retry-After) is not asked from the head path either: the
  // block goes first. After other failures it is asked as before (a drop marked without asking may be revived later).
  const waitMs = deps.backoff?.askedWaitMs() ?? 0;
  if (waitMs > 0) {
    deps.logger.warn({
      msg: "Skipped reading the pending view before marking drops",
      block_number: blockNumber,
      retry_in_ms: waitMs,
    });
    return new Set();
  }
  // Note: a rebuilt pending block re-announces a left-out transaction with no notification (base/base `crates/execution/flashblocks` `processor.rs`);
  // the pre-confirmed view may also still hold the just-canonical block's logs, which do not count.
  try {
    const rows = await fetchLogRows(
      deps,
      { pending: true, ...selection },
      {
        statusOf: () => "preconfirmed",
        source: "pending",
        timestampOf: () => Math.floor(Date.now() / 1_000),
        strict: false,
      },
    );
    return new Set(
      rows
        .filter((r) => r.blockNumber > blockNumber && candidates.has(r.transactionHash))
        .map((r) => r.transactionHash),
    );
  } catch (error) {
    if (!(error instanceof RetryableError)) throw error;
    deps.backoff?.failed(error);
    deps.logger.warn({
      msg: "Failed to read the pending view before marking drops",
      block_number: blockNumber,
      error: error.shortMessage,
    });
    return new Set();
  }
}
