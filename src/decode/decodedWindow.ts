import type { Hex } from "viem";
import type { BlockRange } from "../blockRanges.js";
import type { LogFilter, OutOfFilterReason } from "../chain/getLogs.js";
import type { AnswerBody } from "../chain/httpTransport.js";
import type { NodeError } from "../chain/jsonRpcAnswer.js";
import type { RpcLog } from "../rows/rpcLog.js";
import type { PackedRows } from "../rows/packedRows.js";
import type { UndecodableReason } from "../rows/paymentEvents.js";

/* A backfill window's answer as the decoders take it, and what decoding it gives (sync/historical/windowAnswer.ts, scanWindowAnswer.ts). */

/** The body of one eth_getLogs answer for a backfill window (as received), with what decoding it needs. */
export type WindowAnswer = WindowContext & {
  body: AnswerBody;
  /** The request's JSON-RPC id, and the endpoint's redacted label (for messages). */
  id: number;
  endpoint: string;
};

/** What decoding a window's answer needs besides the answer. */
export type WindowContext = {
  filter: LogFilter & BlockRange;
  chainId: number;
  /** Blocks at or below this are stored as finalized, above it as confirmed. */
  finalized: number;
};

/** A log refused by the filter or the decoder: what the report of it names. */
export type RejectedLog = {
  log: Pick<RpcLog, "address" | "blockNumber" | "transactionHash" | "logIndex">;
  reason: OutOfFilterReason | UndecodableReason;
};

/** Stands in for the timestamp of a block whose logs carried none, until its header is fetched; never stored. */
export const UNKNOWN_TIMESTAMP = -1;

export type DecodedWindow =
  /** Every log checked and decoded; `rejected` ones (a strict caller refuses the answer) are not in `rows`. */
  | {
      kind: "rows";
      rows: PackedRows;
      /** The transaction of each row, in row order (attribution fetches their calldata). */
      txHashes: Hex[];
      /** Each block of the rows with its hash, in order (attribution reads a block's calldata by number and checks its hash). */
      blocks: Array<[number, Hex]>;
      /** Blocks whose logs carried no timestamp, with their hash: their rows hold UNKNOWN_TIMESTAMP. */
      untimed: Array<[number, Hex]>;
      rejected: RejectedLog[];
    }
  /** The node answered with a JSON-RPC error (a range limit, a rate limit…): the RPC client classifies it. */
  | { kind: "nodeError"; error: NodeError }
  /** Not a well-formed answer (bad JSON, wrong id, a malformed log, two hashes for one block): retried. */
  | { kind: "damaged"; message: string };
