import type { Hex } from "viem";

/*
 * Attribution packed as plain values, the way a window's rows are packed (packedRows.ts): built
 * where a window is decoded (decode/packAttribution.ts), moved between threads, written by either
 * backend.
 */

/**
 * Attribution rows flattened into arrays of plain values, as a window's rows are (packedRows.ts):
 * per transaction its TRANSACTION_FIELDS column values (hash first) and the number of records that
 * follow, each a tag (OPERATION or CODE) and RECORD_FIELDS - 1 column values without the hash, in
 * insert order (its own codes, then each user operation followed by its codes). No calldata, no
 * nested objects. A window's attribution comes in batches (one per JSON-RPC batch of transactions);
 * a batch that crossed between threads is its values' JSON text as bytes (attributionToMove), moved
 * with the transfer list: cloned value by value, a million transactions' 23 million values cost the
 * main thread (which only passes them on) seconds of deserializing, copying and collecting garbage.
 */
export type PackedAttribution = {
  batches: Array<unknown[] | Uint8Array<ArrayBuffer>>;
  operationLogs?: OperationLogRows;
};

/**
 * The rows a bundle's mapped logs add (schema 13), as plain values: per bundle whose receipt was
 * read `[tx_hash, operation_logs, operation_logs_error]`, and per indexed log inside one of its
 * operations `[tx_hash, token, tx_log_position, op_index]` (decode/packAttribution.ts operationLogRows).
 */
export type OperationLogRows = {
  bundles: Array<[Hex, string, string | null]>;
  logs: Array<[Hex, Hex, number, number]>;
};

/** Values per transaction before its record count: the columns of `transactions`. */
export const TRANSACTION_FIELDS = 14;
/** Values per record: its tag, then the columns of `user_operations` or `attribution_codes` without the hash. */
export const RECORD_FIELDS = 8;
/** A record's tag: a user operation, or an attribution code. */
export const OPERATION = 0;
export const CODE = 1;

/** op_index of the transaction's own calldata in attribution_codes. */
export const OWN_CALLDATA = -1;

/** A window's attribution when it has none to record. */
export const emptyAttribution = (): PackedAttribution => ({ batches: [] });

/** The same attribution with each batch as JSON bytes, and the buffers to list in postMessage's transferList. */
export function attributionToMove(packed: PackedAttribution): {
  packed: PackedAttribution;
  transfer: ArrayBuffer[];
} {
  const batches = packed.batches.map((batch) =>
    Array.isArray(batch) ? new TextEncoder().encode(JSON.stringify(batch)) : batch,
  );
  // A window's few bundles are cloned as they are.
  return { packed: { ...packed, batches }, transfer: batches.map((batch) => batch.buffer) };
}

/** A batch's values (parsing the JSON of one that crossed threads). */
export function valuesOf(batch: unknown[] | Uint8Array): unknown[] {
  if (Array.isArray(batch)) return batch;
  const values: unknown = JSON.parse(new TextDecoder().decode(batch));
  if (!Array.isArray(values))
    throw new Error("packed attribution: a moved batch does not hold an array");
  return values;
}

/** Packed attribution's rows per transaction, each row's values in its table's column order (store/sqlite/attributionWriter.ts ATTRIBUTION_COLUMNS), hash first. */
export type UnpackedTransaction = {
  transaction: unknown[];
  userOperations: unknown[][];
  codes: unknown[][];
};

/** The rows packed attribution stands for, transaction by transaction. */
export function unpackAttribution(packed: PackedAttribution): UnpackedTransaction[] {
  const transactions: UnpackedTransaction[] = [];
  for (const batch of packed.batches) unpackValues(valuesOf(batch), transactions);
  return transactions;
}

function unpackValues(v: unknown[], transactions: UnpackedTransaction[]): void {
  for (let i = 0; i < v.length;) {
    const unpacked: UnpackedTransaction = {
      transaction: v.slice(i, i + TRANSACTION_FIELDS),
      userOperations: [],
      codes: [],
    };
    const records = v[i + TRANSACTION_FIELDS] as number;
    i += TRANSACTION_FIELDS + 1;
    for (let r = 0; r < records; r++, i += RECORD_FIELDS) {
      const row = [unpacked.transaction[0], ...v.slice(i + 1, i + RECORD_FIELDS)];
      (v[i] === OPERATION ? unpacked.userOperations : unpacked.codes).push(row);
    }
    transactions.push(unpacked);
  }
}
