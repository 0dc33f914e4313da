import type { Hex } from "viem";
import type { AttributedTransaction } from "./types.js";

/**
 * The rows a bundle's mapped logs add (schema 13), as plain values for either backend: per bundle
 * whose receipt was read, `[tx_hash, operation_logs, operation_logs_error]`, and per indexed log
 * inside one of its operations, `[tx_hash, token, tx_log_position, op_index]`. A backend sets a
 * bundle's state only while it is NULL, and writes its logs only then: a bundle already mapped (or
 * found unmapped) keeps its rows, as a stored transaction keeps its codes.
 */
export function operationLogRows(transactions: readonly AttributedTransaction[]): { bundles: Array<[Hex, string, string | null]>; logs: Array<[Hex, Hex, number, number]> } {
  const bundles: Array<[Hex, string, string | null]> = [];
  const logs: Array<[Hex, Hex, number, number]> = [];
  for (const { tx, attribution, bundleLogs } of transactions) {
    if (bundleLogs === undefined || attribution.userOperations === undefined) continue;
    if (bundleLogs.kind === "unmapped") {
      bundles.push([tx.hash, "unmapped", bundleLogs.reason]);
      continue;
    }
    bundles.push([tx.hash, "mapped", null]);
    for (const log of bundleLogs.logs) logs.push([tx.hash, log.token, log.txLogPosition, log.opIndex]);
  }
  return { bundles, logs };
}
