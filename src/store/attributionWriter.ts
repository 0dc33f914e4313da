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

  function insertCodes(hash: Hex, opIndex: number, attribution: Attribution): void {
    if (attribution.kind !== "codes") return;
    attribution.codes.forEach((code, position) => {
      const registry = registryOfCode(attribution, code);
      const custom = registry.kind === "custom" ? registry.registry : undefined;
      insertCode.run(hash, opIndex, position, code.code, code.role, registry.kind, custom?.chainId.toString() ?? null, custom?.address ?? null);
    });
  }

  return {
    /** Whether the transaction's attribution is already stored. */
    has: (hash: Hex): boolean => exists.get(hash) !== undefined,
    insert(transactions: readonly AttributedTransaction[], now: number): number {
      let inserted = 0;
      for (const { chainId, tx, attribution } of transactions) {
        const own = attribution.attribution;
        const registry = own.kind === "codes" && own.schemaId === 1 ? own.registry : undefined;
        const result = insertTransaction.run(
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
          own.kind === "malformed" ? own.reason : null,
          registryErrorOf(own),
          attribution.userOperations?.length ?? 0,
          now,
        );
        if (result.changes === 0) continue;
        inserted++;
        insertCodes(tx.hash, OWN_CALLDATA, own);
        for (const op of attribution.userOperations ?? []) {
          const a = op.attribution;
          insertUserOperation.run(
            tx.hash,
            op.userOpIndex,
            op.sender.toLowerCase(),
            op.aggregator?.toLowerCase() ?? null,
            a.kind,
            "schemaId" in a ? (a.schemaId ?? null) : null,
            a.kind === "malformed" ? a.reason : null,
            registryErrorOf(a),
          );
          insertCodes(tx.hash, op.userOpIndex, a);
        }
      }
      return inserted;
    },
  };
}

export type AttributionWriter = ReturnType<typeof createAttributionWriter>;

/** Why schema 2's `r` did not parse, when it did not; the codes are stored regardless. */
function registryErrorOf(attribution: Attribution): string | null {
  return attribution.kind === "codes" && attribution.schemaId === 2 ? (attribution.registryError?.reason ?? null) : null;
}
