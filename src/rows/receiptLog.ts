import type { Hex } from "viem";

/** A log of a bundle's receipt, as the mapping reads it (in logIndex order). */
export type ReceiptLog = { address: Hex; topics: readonly Hex[]; data: Hex; logIndex: number };
