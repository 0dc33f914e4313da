import type { Database } from "better-sqlite3";
import type { Hex } from "viem";
import type { TransactionInput } from "../chain/getTransactions.js";
import type { TransactionAttribution } from "../decode/attributeTransaction.js";
import { registryOfCode, type Attribution } from "../decode/erc8021.js";

/** One transaction that emitted an indexed log, with its decoded ERC-8021 attribution. */
export type AttributedTransaction = { chainId: number; tx: TransactionInput; attribution: TransactionAttribution };

/** op_index of the transaction's own calldata in attribution_codes. */
const OWN_CALLDATA = -1;

/**
 * Writes attribution rows. Idempotent: calldata never changes for a hash, so a transaction already
 * stored is skipped. Call inside the transaction that stores the logs it explains.
 */
export function createAttributionWriter(db: Database) {
  const insertTransaction = db.prepare(`
    INSERT INTO transactions (tx_hash, chain_id, from_address, to_address, selector, input_bytes, attribution,
      schema_id, registry_address, registry_chain_id, malformed_reason, registry_error, user_operations, fetched_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (tx_hash) DO NOTHING`);
  const insertUserOperation = db.prepare(`
    INSERT INTO user_operations (tx_hash, op_index, sender, aggregator, attribution, schema_id, malformed_reason, registry_error)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
  const insertCode = db.prepare(`
    INSERT INTO attribution_codes (tx_hash, op_index, position, code, role, registry, registry_chain_id, registry_address)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
  const exists = db.prepare("SELECT 1 FROM transactions WHERE tx_hash = ?").pluck();

  /** Inserts packed attribution (packAttribution): a transaction already stored is skipped with its codes and operations. */
  function insertPacked({ values: v }: PackedAttribution): number {
    let inserted = 0;
    for (let i = 0; i < v.length; ) {
      const hash = v[i];
      const fresh =
        insertTransaction.run(hash, v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7], v[i + 8], v[i + 9], v[i + 10], v[i + 11], v[i + 12], v[i + 13])
          .changes > 0;
      const records = v[i + TRANSACTION_FIELDS] as number;
      i += TRANSACTION_FIELDS + 1;
      for (let r = 0; r < records; r++, i += RECORD_FIELDS) {
        if (!fresh) continue;
        const insert = v[i] === OPERATION ? insertUserOperation : insertCode;
        insert.run(hash, v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7]);
      }
      if (fresh) inserted++;
    }
    return inserted;
  }

  return {
    /** Whether the transaction's attribution is already stored. */
    has: (hash: Hex): boolean => exists.get(hash) !== undefined,
    insertPacked,
    insert: (transactions: readonly AttributedTransaction[], now: number): number => insertPacked(packAttribution(transactions, now)),
  };
}

/**
 * Attribution rows flattened into one array of plain values, as a window's rows are (packedRows.ts):
 * per transaction its TRANSACTION_FIELDS column values (hash first) and the number of records that
 * follow, each a tag (OPERATION or CODE) and RECORD_FIELDS - 1 column values without the hash, in
 * insert order (its own codes, then each user operation followed by its codes). What crosses to the
 * writer thread: no calldata, no nested objects.
 */
export type PackedAttribution = { values: unknown[] };
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
      own.kind === "malformed" ? own.reason : null, registryErrorOf(own), attribution.userOperations?.length ?? 0, now,
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
        "schemaId" in a ? (a.schemaId ?? null) : null, a.kind === "malformed" ? a.reason : null, registryErrorOf(a),
      );
      records++;
      pushCodes(op.userOpIndex, a);
    }
    values[countAt] = records;
  }
  return { values };
}

/** Why schema 2's `r` did not parse, when it did not; the codes are stored regardless. */
function registryErrorOf(attribution: Attribution): string | null {
  return attribution.kind === "codes" && attribution.schemaId === 2 ? (attribution.registryError?.reason ?? null) : null;
}
