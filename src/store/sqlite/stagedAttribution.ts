import type { Database } from "better-sqlite3";
import { ATTRIBUTION_COLUMNS } from "./attributionWriter.js";
import { sortingOnDisk } from "./readerIndexes.js";

/**
 * Moves a bulk backfill's staged attribution (schemaV10.ts) into `transactions`, `user_operations`
 * and `attribution_codes`, in hash order: each page of their keys is then written once, where a
 * window at a time wrote thousands of them over and over. One transaction: a reader sees all of it
 * or none, and a crash leaves it staged for the next backfill.
 *
 * The rows stored are those the window-by-window inserts store: a transaction already stored (the
 * live path attributed it meanwhile) keeps its row, codes and operations, and its staged ones are
 * dropped; a transaction staged twice (a window fetched again after a crash) is stored once, as
 * first fetched (the rows insert in that order, and the first one's key makes the next conflict).
 * A bundle's mapping (schema 13) likewise: its state is set only where `operation_logs` is NULL, to
 * the one first staged, and its logs are written only then.
 */
export function createStagedAttribution(db: Database) {
  const staged = db.prepare("SELECT EXISTS (SELECT 1 FROM staged_transactions)").pluck();
  const unstored = "NOT EXISTS (SELECT 1 FROM transactions t WHERE t.tx_hash = s.tx_hash)";
  // Operations and codes first, while `transactions` still tells which transactions are new; their
  // parents follow in the same transaction (the foreign keys are checked at its commit).
  /** INSERT … SELECT from a table's staging twin (aliased `s`), in `order`. */
  const move = (
    table: keyof typeof ATTRIBUTION_COLUMNS,
    where: string,
    order: string,
    onConflict: string,
  ) => {
    const columns = ATTRIBUTION_COLUMNS[table];
    return db.prepare(`
      INSERT INTO ${table} (${columns.join(", ")})
      SELECT ${columns.map((c) => `s.${c}`).join(", ")} FROM staged_${table} s
      WHERE ${where} ORDER BY ${order} ${onConflict}`);
  };
  const moveUserOperations = move(
    "user_operations",
    unstored,
    "s.tx_hash, s.op_index",
    "ON CONFLICT DO NOTHING",
  );
  const moveCodes = move(
    "attribution_codes",
    unstored,
    "s.tx_hash, s.op_index, s.position",
    "ON CONFLICT DO NOTHING",
  );
  const moveTransactions = move(
    "transactions",
    "true",
    "s.tx_hash, s.fetched_at",
    "ON CONFLICT (tx_hash) DO NOTHING",
  );
  // A bundle staged twice (a window fetched again after a crash) is mapped as first staged (the
  // bare columns of a MIN() aggregate are taken from the row holding the minimum).
  const firstStaged =
    "(SELECT tx_hash, operation_logs, operation_logs_error, MIN(rowid) AS id FROM staged_bundles GROUP BY tx_hash) b";
  // Only the logs staged with that mapping. Before `moveTransactions` and `mapBundles`: a bundle
  // already stored keeps its mapping, and its staged logs are dropped.
  const moveOperationLogs = db.prepare(`
    INSERT INTO user_operation_logs (tx_hash, token, tx_log_position, op_index)
    SELECT s.tx_hash, s.token, s.tx_log_position, s.op_index FROM staged_user_operation_logs s JOIN ${firstStaged} ON b.id = s.staged_bundle
    WHERE b.operation_logs = 'mapped'
      AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.tx_hash = s.tx_hash AND t.operation_logs IS NOT NULL)
    ORDER BY s.tx_hash, s.token, s.tx_log_position ON CONFLICT DO NOTHING`);
  const mapBundles = db.prepare(`
    UPDATE transactions AS t SET operation_logs = b.operation_logs, operation_logs_error = b.operation_logs_error
    FROM ${firstStaged}
    WHERE b.tx_hash = t.tx_hash AND t.operation_logs IS NULL AND t.user_operations > 0`);
  const empty = [
    "staged_user_operations",
    "staged_attribution_codes",
    "staged_transactions",
    "staged_bundles",
    "staged_user_operation_logs",
  ].map((table) => db.prepare(`DELETE FROM ${table}`));

  return {
    /** Whether attribution is staged (a bulk backfill stored windows and has not moved it yet). */
    pending: (): boolean => staged.get() === 1,
    /** Moves it all; returns how many transactions were new to `transactions`. */
    move: (): number =>
      sortingOnDisk(db, () =>
        db
          .transaction(() => {
            db.pragma("defer_foreign_keys = ON");
            moveUserOperations.run();
            moveCodes.run();
            moveOperationLogs.run();
            const moved = moveTransactions.run().changes;
            mapBundles.run();
            for (const statement of empty) statement.run();
            return moved;
          })
          .immediate(),
      ),
  };
}
