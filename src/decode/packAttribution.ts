import type { Hex } from "viem";
import {
  CODE,
  OPERATION,
  OWN_CALLDATA,
  type OperationLogRows,
  type PackedAttribution,
} from "../rows/packedAttribution.js";
import type { AttributedTransaction } from "./attributeTransaction.js";
import { registryOfCode, type Attribution } from "./erc8021.js";
import type { BundleLogs } from "./userOperationLogs.js";

/* Decoded attribution into the packed layout of rows/packedAttribution.ts, where a window is decoded. */

/** Packs decoded attribution at `now` (unix ms, its fetched_at) into one batch of plain values. */
export function packAttribution(
  transactions: readonly AttributedTransaction[],
  now: number,
): PackedAttribution {
  const values: unknown[] = [];
  for (const { chainId, tx, attribution } of transactions) {
    const own = attribution.attribution;
    const registry = own.kind === "codes" && own.schemaId === 1 ? own.registry : undefined;
    values.push(
      tx.hash,
      chainId,
      tx.from,
      tx.to,
      tx.input.length >= 10 ? tx.input.slice(0, 10) : null,
      (tx.input.length - 2) / 2,
      own.kind,
      "schemaId" in own ? (own.schemaId ?? null) : null,
      registry?.address ?? null,
      registry === undefined ? null : registry.chainId.toString(),
      malformedReasonOf(own),
      registryErrorOf(own),
      attribution.userOperations?.length ?? 0,
      now,
    );
    const countAt = values.push(0) - 1;
    let records = 0;
    const pushCodes = (opIndex: number, a: Attribution) => {
      if (a.kind !== "codes") return;
      a.codes.forEach((code, position) => {
        const registry = registryOfCode(a, code);
        const custom = registry.kind === "custom" ? registry.registry : undefined;
        values.push(
          CODE,
          opIndex,
          position,
          code.code,
          code.role,
          registry.kind,
          custom?.chainId.toString() ?? null,
          custom?.address ?? null,
        );
        records++;
      });
    };
    pushCodes(OWN_CALLDATA, own);
    for (const op of attribution.userOperations ?? []) {
      const a = op.attribution;
      values.push(
        OPERATION,
        op.userOpIndex,
        op.sender.toLowerCase(),
        op.aggregator?.toLowerCase() ?? null,
        a.kind,
        "schemaId" in a ? (a.schemaId ?? null) : null,
        malformedReasonOf(a),
        registryErrorOf(a),
      );
      records++;
      pushCodes(op.userOpIndex, a);
    }
    values[countAt] = records;
  }
  const operationLogs = operationLogRows(transactions);
  return operationLogs.bundles.length === 0
    ? { batches: [values] }
    : { batches: [values], operationLogs };
}

/**
 * The rows a bundle's mapped logs add (schema 13), as plain values for either backend: per bundle
 * whose receipt was read, `[tx_hash, operation_logs, operation_logs_error]`, and per indexed log
 * inside one of its operations, `[tx_hash, token, tx_log_position, op_index]`. A backend sets a
 * bundle's state only while it is NULL, and writes its logs only then: a bundle already mapped (or
 * found unmapped) keeps its rows, as a stored transaction keeps its codes.
 */
export function operationLogRows(transactions: readonly AttributedTransaction[]): OperationLogRows {
  return bundleRows(
    transactions.flatMap(({ tx, attribution, bundleLogs }) =>
      bundleLogs === undefined || attribution.userOperations === undefined
        ? []
        : [[tx.hash, bundleLogs] as const],
    ),
  );
}

/** The same rows from each bundle's hash and mapping. */
export function bundleRows(mapped: ReadonlyArray<readonly [Hex, BundleLogs]>): OperationLogRows {
  const rows: OperationLogRows = { bundles: [], logs: [] };
  for (const [hash, bundleLogs] of mapped) {
    if (bundleLogs.kind === "unmapped") {
      rows.bundles.push([hash, "unmapped", bundleLogs.reason]);
      continue;
    }
    rows.bundles.push([hash, "mapped", null]);
    for (const log of bundleLogs.logs)
      rows.logs.push([hash, log.token, log.txLogPosition, log.opIndex]);
  }
  return rows;
}

/** Why the suffix did not parse, or (codes kept) why schema 2's `s` was dropped. */
function malformedReasonOf(attribution: Attribution): string | null {
  if (attribution.kind === "malformed") return attribution.reason;
  return attribution.kind === "codes" && attribution.schemaId === 2
    ? (attribution.serviceError ?? null)
    : null;
}

/** Why schema 2's `r` did not parse, when it did not; the codes are stored regardless. */
function registryErrorOf(attribution: Attribution): string | null {
  return attribution.kind === "codes" && attribution.schemaId === 2
    ? (attribution.registryError?.reason ?? null)
    : null;
}
