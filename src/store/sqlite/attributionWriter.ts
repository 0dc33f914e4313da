import type { Database } from "better-sqlite3";
import type { Hex } from "viem";
import {
  OPERATION,
  RECORD_FIELDS,
  TRANSACTION_FIELDS,
  valuesOf,
} from "../../rows/packedAttribution.js";
import { packAttribution } from "../../decode/packAttribution.js";
import type { AttributedTransaction } from "../../decode/attributeTransaction.js";
import type { PackedAttribution } from "../../rows/packedAttribution.js";

/**
 * Hashes looked up per query by `unstored`: a query's cost is mostly the call itself, so a hundred
 * per query cost a fraction of one query per hash (`attribution-lookup-batch` in
 * scripts/bench/results/measurements.csv).
 */
const LOOKUP_BATCH = 100;

/**
 * Writes attribution rows. Idempotent: calldata never changes for a hash, so a transaction already
 * stored is skipped. Call inside the transaction that stores the logs it explains.
 */
export function createAttributionWriter(db: Database) {
  const keyed = prepareInserts(db, "", {
    transactions: "ON CONFLICT (tx_hash) DO NOTHING",
    rest: "ON CONFLICT DO NOTHING",
  });
  // Prepared on first use: a file opened read-only may predate the staging tables (schema v10).
  let staged: Inserts | undefined;
  const stored = db
    .prepare(
      `SELECT tx_hash FROM transactions WHERE tx_hash IN (${Array.from({ length: LOOKUP_BATCH }, () => "?").join(", ")})`,
    )
    .pluck();

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
    /** Inserts packed attribution (rows/packedAttribution.ts): a transaction already stored is skipped with its codes and operations. */
    insertPacked: (packed: PackedAttribution, between?: Between): number =>
      insertPacked(keyed, packed, between),
    /**
     * Appends packed attribution to the staging tables (a bulk backfill; stagedAttribution.ts moves
     * it); returns the transactions staged. `between` as for the log writer's insertPacked.
     */
    stagePacked: (packed: PackedAttribution, between?: Between): number =>
      insertPacked(
        (staged ??= prepareInserts(db, "staged_", { transactions: "", rest: "" })),
        packed,
        between,
      ),
    insert: (transactions: readonly AttributedTransaction[], now: number): number =>
      insertPacked(keyed, packAttribution(transactions, now)),
  };
}

type Inserts = ReturnType<typeof prepareInserts>;

/**
 * The attribution tables' columns in packed order (rows/packedAttribution.ts): the inserts below and the
 * staged attribution's move (stagedAttribution.ts) name them from here.
 */
export const ATTRIBUTION_COLUMNS = {
  transactions: [
    "tx_hash",
    "chain_id",
    "from_address",
    "to_address",
    "selector",
    "input_bytes",
    "attribution",
    "schema_id",
    "registry_address",
    "registry_chain_id",
    "malformed_reason",
    "registry_error",
    "user_operations",
    "fetched_at",
  ],
  user_operations: [
    "tx_hash",
    "op_index",
    "sender",
    "aggregator",
    "attribution",
    "schema_id",
    "malformed_reason",
    "registry_error",
  ],
  attribution_codes: [
    "tx_hash",
    "op_index",
    "position",
    "code",
    "role",
    "registry",
    "registry_chain_id",
    "registry_address",
  ],
} as const;

/** The inserts into the attribution tables, or into their staging twins (`prefix` "staged_", no keys to conflict on). */
function prepareInserts(
  db: Database,
  prefix: "" | "staged_",
  onConflict: { transactions: string; rest: string },
) {
  const insert = (table: keyof typeof ATTRIBUTION_COLUMNS, tail: string) => {
    const columns = ATTRIBUTION_COLUMNS[table];
    return db.prepare(
      `INSERT INTO ${prefix}${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ${tail}`,
    );
  };
  // A bundle's state is set only while NULL, and its logs written only then; staged, both are
  // appended, each log naming its bundle row, and the move applies that rule (stagedAttribution.ts).
  const operationLog = db.prepare(
    prefix === ""
      ? "INSERT INTO user_operation_logs (tx_hash, token, tx_log_position, op_index) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
      : "INSERT INTO staged_user_operation_logs (tx_hash, token, tx_log_position, op_index, staged_bundle) VALUES (?, ?, ?, ?, ?)",
  );
  const bundle =
    prefix === ""
      ? db.prepare(
          "UPDATE transactions SET operation_logs = ?, operation_logs_error = ? WHERE tx_hash = ? AND user_operations > 0 AND operation_logs IS NULL",
        )
      : db.prepare(
          "INSERT INTO staged_bundles (operation_logs, operation_logs_error, tx_hash) VALUES (?, ?, ?)",
        );
  return {
    /** Records a bundle's mapping; the values its logs' rows end with, or undefined when they are not to be written. */
    bundle: (state: string, error: string | null, hash: Hex): unknown[] | undefined => {
      const result = bundle.run(state, error, hash);
      if (result.changes === 0) return undefined;
      return prefix === "" ? [] : [result.lastInsertRowid];
    },
    operationLog,
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
  for (const batch of packed.batches)
    inserted += insertValues(inserts, valuesOf(batch), () => {
      if (between !== undefined && t > 0 && t % between.every === 0) between.run();
      t++;
    });
  if (packed.operationLogs !== undefined) {
    const mapped = new Map<Hex, unknown[]>();
    for (const [hash, state, error] of packed.operationLogs.bundles) {
      const tail = inserts.bundle(state, error, hash);
      if (tail !== undefined) mapped.set(hash, tail);
    }
    for (const row of packed.operationLogs.logs) {
      const tail = mapped.get(row[0]);
      if (tail !== undefined) inserts.operationLog.run(...row, ...tail);
    }
  }
  return inserted;
}

/** insertPacked for one batch's values; `next` runs before each transaction. */
function insertValues(inserts: Inserts, v: unknown[], next: () => void): number {
  let inserted = 0;
  for (let i = 0; i < v.length;) {
    next();
    const hash = v[i];
    const fresh =
      inserts.transaction.run(
        hash,
        v[i + 1],
        v[i + 2],
        v[i + 3],
        v[i + 4],
        v[i + 5],
        v[i + 6],
        v[i + 7],
        v[i + 8],
        v[i + 9],
        v[i + 10],
        v[i + 11],
        v[i + 12],
        v[i + 13],
      ).changes > 0;
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
