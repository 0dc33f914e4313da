import type { Hex } from "viem";
import { decodeAttribution, type Attribution } from "./erc8021.js";
import { decodeHandleOps } from "./erc4337.js";

/** `userOpIndex` counts across the whole bundle (across aggregator groups too); `aggregator` only for handleAggregatedOps. */
export type UserOperationAttribution = { userOpIndex: number; sender: Hex; aggregator?: Hex; attribution: Attribution };

export type TransactionAttribution = {
  /** The suffix on the transaction's own input (for a bundle: the bundler's). */
  attribution: Attribution;
  /** One entry per user operation when the input is an EntryPoint `handleOps`/`handleAggregatedOps` call, else undefined. */
  userOperations: UserOperationAttribution[] | undefined;
};

/**
 * ERC-8021 attribution of one transaction: its own suffix and, for ERC-4337 bundles, the suffix of
 * each user operation's callData (where wallets put it). Pure; never throws.
 */
export function attributeTransaction(tx: { input: Hex }): TransactionAttribution {
  const userOperations = decodeHandleOps(tx.input)?.map(
    (op): UserOperationAttribution => ({
      userOpIndex: op.index,
      sender: op.sender,
      ...(op.aggregator === undefined ? {} : { aggregator: op.aggregator }),
      attribution: decodeAttribution(op.callData),
    }),
  );
  return { attribution: decodeAttribution(tx.input), userOperations };
}

/** flashindex_attribution_transactions_total's labels for a transaction's own attribution. */
export function attributionLabels(attribution: Attribution): { result: Attribution["kind"]; schema: string } {
  return { result: attribution.kind, schema: "schemaId" in attribution && attribution.schemaId !== undefined ? String(attribution.schemaId) : "none" };
}
