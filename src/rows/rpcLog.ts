import type { Hex } from "viem";

/** A log as an RPC returned it, shape-checked and normalised (lower-case hex, numbers). */
export type RpcLog = {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: number;
  blockHash: Hex;
  /** Unix seconds; Base nodes send it, some nodes omit it. */
  blockTimestamp: number | undefined;
  transactionHash: Hex;
  transactionIndex: number;
  logIndex: number;
  removed: boolean;
};

/** The block hash of a pre-confirmed log (32 zero bytes), as Base's Flashblocks nodes send it. */
export const PRECONFIRMED_BLOCK_HASH: Hex = `0x${"0".repeat(64)}`;
