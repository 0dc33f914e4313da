import type { Hex } from "viem";
import type { TransactionInput } from "../rows/transactionInput.js";
import { decodeAttribution, type Attribution } from "./erc8021.js";
import { decodeHandleOps, ENTRY_POINT_ADDRESSES } from "./erc4337.js";
import type { BundleLogs } from "./userOperationLogs.js";

/**
 * `userOpIndex` counts across the whole bundle (across aggregator groups too); `aggregator` only for
 * handleAggregatedOps. `sender` and `nonce` identify the operation in the EntryPoint's events.
 */
export type UserOperationAttribution = {
  userOpIndex: number;
  sender: Hex;
  nonce: bigint;
  aggregator?: Hex;
  attribution: Attribution;
};

/** The EntryPoints a bundle is recognised by when the configuration names none: every known deployment, lowercase. */
export const DEFAULT_ENTRY_POINTS: readonly Hex[] = Object.values(ENTRY_POINT_ADDRESSES).map(
  (address) => address.toLowerCase() as Hex,
);

export type TransactionAttribution = {
  /** The suffix on the transaction's own input (for a bundle: the bundler's). */
  attribution: Attribution;
  /** One entry per user operation when the transaction calls an EntryPoint's `handleOps`/`handleAggregatedOps`, else undefined. */
  userOperations: UserOperationAttribution[] | undefined;
};

/**
 * ERC-8021 attribution of one transaction: its own suffix and, for ERC-4337 bundles, the suffix of
 * each user operation's callData (where wallets put it). A transaction is a bundle only when its
 * `to` is one of `entryPoints` (lowercase): the selector alone is anyone's to use. Pure; never throws.
 */
export function attributeTransaction(
  tx: { input: Hex; to: Hex | null },
  entryPoints: readonly Hex[] = DEFAULT_ENTRY_POINTS,
): TransactionAttribution {
  const bundle = tx.to !== null && entryPoints.includes(tx.to.toLowerCase() as Hex);
  const userOperations = (bundle ? decodeHandleOps(tx.input) : undefined)?.map(
    (op): UserOperationAttribution => ({
      userOpIndex: op.index,
      sender: op.sender,
      nonce: op.nonce,
      ...(op.aggregator === undefined ? {} : { aggregator: op.aggregator }),
      attribution: decodeAttribution(op.callData),
    }),
  );
  return { attribution: decodeAttribution(tx.input), userOperations };
}

/** flashindex_attribution_transactions_total's labels for a transaction's own attribution. */
export function attributionLabels(attribution: Attribution): {
  result: Attribution["kind"];
  schema: string;
} {
  return {
    result: attribution.kind,
    schema:
      "schemaId" in attribution && attribution.schemaId !== undefined
        ? String(attribution.schemaId)
        : "none",
  };
}

/**
 * One transaction that emitted an indexed log, with its decoded ERC-8021 attribution. `bundleLogs`: for an ERC-4337 bundle whose receipt was read, which user operation each of its
 * indexed logs belongs to (or why that cannot be said); absent when not read (a backfill's bundles).
 */
export type AttributedTransaction = {
  chainId: number;
  tx: TransactionInput;
  attribution: TransactionAttribution;
  bundleLogs?: BundleLogs;
};
