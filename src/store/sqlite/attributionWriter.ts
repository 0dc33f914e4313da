import type { Database } from "better-sqlite3";
import type { Hex } from "viem";
import { registryOfCode, type Attribution } from "../../decode/erc8021.js";
import type { AttributedTransaction, PackedAttribution } from "../types.js";

/**
 * Hashes looked up per query by `unstored`: one query per hash cost 1–1.9 µs a hash (the call
 * itself, mostly), a hundred per query 0.3–1 µs (measured on 2,000 hashes, 0 and 100,000 stored).
 */
const LOOKUP_BATCH = 100;

/** op_index of the transaction's own calldata in attribution_codes. */
const OWN_CALLDATA = -1;

/**
 * Writes attribution rows. Idempotent: calldata never changes for a hash, so a transaction already
 * stored is skipped. Call inside the transaction that stores the logs it explains.
 */
export function createAttributionWriter(db: Database) {
  const keyed = prepareInserts(db, "", { transactions: "ON CONFLICT (tx_hash) DO NOTHING", rest: "ON CONFLICT DO NOTHING" });
  // Prepared on first use: a file opened read-only may predate the staging tables (schema v10).
  let staged: Inserts | undefined;
  const stored = db.prepare(`SELECT tx_hash FROM transactions WHERE tx_hash IN (${Array.from({ length: LOOKUP_BATCH }, () => "?").join(", ")})`).pluck();

  return {
    /**
     * Of these transactions, those whose attribution is not stored yet (staged attribution counts
     * as not stored: see schemaV10.ts), LOOKUP_BATCH hashes a query.
     */
    unstored(hashes: readonly Hex[]): Hex[] {
      const found = new Set<unknown>();
      for (let start = 0; start < hashes.length; start += LOOKUP_BATCH) {
        const batch: Array<Hex | null> = hashes.slice(start, start + LOOKUP_BATCH);
        // The last batch is filled with NULLs, which match nothing.
        while (batch.length < LOOKUP_BATCH) batch.push(null);
        for (const hash of stored.all(batch)) found.add(hash);
      }
      return found.size === 0 ? [...hashes] : hashes.filter((hash) => !found.has(hash));
    },
    /** Inserts packed attribution (packAttribution): a transaction already stored is skipped with its codes and operations. */
    insertPacked: (packed: PackedAttribution, between?: Between): number => insertPacked(keyed, packed, between),
    /**
     * Appends packed attribution to the staging tables (a bulk backfill; stagedAttribution.ts moves
     * it); returns the transactions staged. `between` as for the log writer's insertPacked.
     */
    stagePacked: (packed: PackedAttribution, between?: Between): number =>
      insertPacked((staged ??= prepareInserts(db, "staged_", { transactions: "", rest: "" })), packed, between),
    insert: (transactions: readonly AttributedTransaction[], now: number): number => insertPacked(keyed, packAttribution(transactions, now)),
  };
}

type Inserts = ReturnType<typeof prepareInserts>;

/**
 * The attribution tables' columns in packed order (packAttribution): the inserts below and the
 * staged attribution's move (stagedAttribution.ts) name them from here.
 */
export const ATTRIBUTION_COLUMNS = {
  transactions: [
    "tx_hash", "chain_id", "from_address", "to_address", "selector", "input_bytes", "attribution",
    "schema_id", "registry_address", "registry_chain_id", "malformed_reason", "registry_error", "user_operations", "fetched_at",
  ],
  user_operations: ["tx_hash", "op_index", "sender", "aggregator", "attribution", "schema_id", "malformed_reason", "registry_error"],
  attribution_codes: ["tx_hash", "op_index", "position", "code", "role", "registry", "registry_chain_id", "registry_address"],
} as const;

/** The three inserts into the attribution tables, or into their staging twins (`prefix` "staged_", no keys to conflict on). */
function prepareInserts(db: Database, prefix: "" | "staged_", onConflict: { transactions: string; rest: string }) {
  const insert = (table: keyof typeof ATTRIBUTION_COLUMNS, tail: string) => {
    const columns = ATTRIBUTION_COLUMNS[table];
    return db.prepare(`INSERT INTO ${prefix}${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ${tail}`);
  };
  return {
    transaction: insert("transactions", onConflict.transactions),
    userOperation: insert("user_operations", onConflict.rest),
    code: insert("attribution_codes", onConflict.rest),
  };
}

/** Called after every `every` transactions (the window writer steps aside there for a live write). */
type Between = { every: number; run: () => void };

/** Writes packed attribution with `inserts`; a transaction the insert skips (already stored) is skipped with its codes and operations. */
function insertPacked(inserts: Inserts, packed: PackedAttribution, between?: Between): number {
  let inserted = 0;
  let t = 0;
  for (const batch of packed.batches) inserted += insertValues(inserts, valuesOf(batch), () => {
    if (between !== undefined && t > 0 && t % between.every === 0) between.run();
    t++;
  });
  return inserted;
}

/** insertPacked for one batch's values; `next` runs before each transaction. */
function insertValues(inserts: Inserts, v: unknown[], next: () => void): number {
  let inserted = 0;
  for (let i = 0; i < v.length; ) {
    next();
    const hash = v[i];
    const fresh =
      inserts.transaction.run(hash, v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7], v[i + 8], v[i + 9], v[i + 10], v[i + 11], v[i + 12], v[i + 13])
        .changes > 0;
    const records = v[i + TRANSACTION_FIELDS] as number;
    i += TRANSACTION_FIELDS + 1;
    for (let r = 0; r < records; r++, i += RECORD_FIELDS) {
      if (!fresh) continue;
      const insert = v[i] === OPERATION ? inserts.userOperation : inserts.code;
      insert.run(hash, v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7]);
    }
    if (fresh) inserted++;
  }
  return inserted;
}

export const emptyAttribution = (): PackedAttribution => ({ batches: [] });

/** The same attribution with each batch as JSON bytes, and the buffers to list in postMessage's transferList. */
export function attributionToMove(packed: PackedAttribution): { packed: PackedAttribution; transfer: ArrayBuffer[] } {
  const batches = packed.batches.map((batch) => (Array.isArray(batch) ? new TextEncoder().encode(JSON.stringify(batch)) : batch));
  return { packed: { batches }, transfer: batches.map((batch) => batch.buffer) };
}

/** A batch's values (parsing the JSON of one that crossed threads). */
function valuesOf(batch: unknown[] | Uint8Array): unknown[] {
  if (Array.isArray(batch)) return batch;
  const values: unknown = JSON.parse(new TextDecoder().decode(batch));
  if (!Array.isArray(values)) throw new Error("packed attribution: a moved batch does not hold an array");
  return values;
}
const TRANSACTION_FIELDS = 14;
const RECORD_FIELDS = 8;
const OPERATION = 0;
const CODE = 1;

export function packAttribution(transactions: readonly AttributedTransaction[], now: number): PackedAttribution {
  const values: unknown[] = [];
  for (const { chainId, tx, attribution } of transactions) {
    const own = attribution.attribution;
    const registry = own.kind === "codes" && own.schemaId === 1 ? own.registry : undefined;
    values.push(
      tx.hash, chainId, tx.from, tx.to, tx.input.length >= 10 ? tx.input.slice(0, 10) : null, (tx.input.length - 2) / 2, own.kind,
      "schemaId" in own ? (own.schemaId ?? null) : null, registry?.address ?? null, registry === undefined ? null : registry.chainId.toString(),
      malformedReasonOf(own), registryErrorOf(own), attribution.userOperations?.length ?? 0, now,
    );
    const countAt = values.push(0) - 1;
    let records = 0;
    const pushCodes = (opIndex: number, a: Attribution) => {
      if (a.kind !== "codes") return;
      a.codes.forEach((code, position) => {
        const registry = registryOfCode(a, code);
        const custom = registry.kind === "custom" ? registry.registry : undefined;
        values.push(CODE, opIndex, position, code.code, code.role, registry.kind, custom?.chainId.toString() ?? null, custom?.address ?? null);
        records++;
      });
    };
    pushCodes(OWN_CALLDATA, own);
    for (const op of attribution.userOperations ?? []) {
      const a = op.attribution;
      values.push(
        OPERATION, op.userOpIndex, op.sender.toLowerCase(), op.aggregator?.toLowerCase() ?? null, a.kind,
        "schemaId" in a ? (a.schemaId ?? null) : null, malformedReasonOf(a), registryErrorOf(a),
      );
      records++;
      pushCodes(op.userOpIndex, a);
    }
    values[countAt] = records;
  }
  return { batches: [values] };
}

/** Packed attribution's rows per transaction, each row's values in its table's column order (the inserts above), hash first. */
export type UnpackedTransaction = { transaction: unknown[]; userOperations: unknown[][]; codes: unknown[][] };

export function unpackAttribution(packed: PackedAttribution): UnpackedTransaction[] {
  const transactions: UnpackedTransaction[] = [];
  for (const batch of packed.batches) unpackValues(valuesOf(batch), transactions);
  return transactions;
}

function unpackValues(v: unknown[], transactions: UnpackedTransaction[]): void {
  for (let i = 0; i < v.length; ) {
    const unpacked: UnpackedTransaction = { transaction: v.slice(i, i + TRANSACTION_FIELDS), userOperations: [], codes: [] };
    const records = v[i + TRANSACTION_FIELDS] as number;
    i += TRANSACTION_FIELDS + 1;
    for (let r = 0; r < records; r++, i += RECORD_FIELDS) {
      const row = [unpacked.transaction[0], ...v.slice(i + 1, i + RECORD_FIELDS)];
      (v[i] === OPERATION ? unpacked.userOperations : unpacked.codes).push(row);
    }
    transactions.push(unpacked);
  }
}

/** Why the suffix did not parse, or (codes kept) why schema 2's `s` was dropped. */
function malformedReasonOf(attribution: Attribution): string | null {
  if (attribution.kind === "malformed") return attribution.reason;
  return attribution.kind === "codes" && attribution.schemaId === 2 ? (attribution.serviceError ?? null) : null;
}

/** Why schema 2's `r` did not parse, when it did not; the codes are stored regardless. */
function registryErrorOf(attribution: Attribution): string | null {
  return attribution.kind === "codes" && attribution.schemaId === 2 ? (attribution.registryError?.reason ?? null) : null;
}
