import type { Hex } from "viem";

/** A transaction as the chain gives it, reduced to what attribution needs (lower-case hex). */
export type TransactionInput = { hash: Hex; from: Hex; to: Hex | null; input: Hex };
