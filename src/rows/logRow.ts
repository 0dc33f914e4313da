import type { RpcLog } from "./rpcLog.js";
import type { PaymentEvent, UndecodableReason } from "./paymentEvents.js";

export type LogStatus = "preconfirmed" | "confirmed" | "finalized" | "removed" | "dropped";
export type LogSource = "backfill" | "head" | "pending" | "pending_ws";

/** One decoded log ready for the store. */
export type LogRow = Omit<RpcLog, "blockTimestamp" | "removed"> & {
  chainId: number;
  blockTimestamp: number;
  /** Position among the indexed logs of the same token in this transaction (0-based). */
  txLogPosition: number;
  event: PaymentEvent;
  status: LogStatus;
  source: LogSource;
};

export type Rejection = { log: RpcLog; reason: UndecodableReason };
