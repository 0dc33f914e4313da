import type { Database, Statement } from "better-sqlite3";
import type { Hex } from "viem";
import type { LogRow } from "../../rows/logRow.js";
import { twinContent } from "../../decode/preconfirmedTwins.js";
import {
  canonicalBlockPlan,
  chainChangePlan,
  preconfirmedPlan,
  runLifecyclePlan,
  type LifecycleStatements,
  type StoredTwin,
  type UnlandedRow,
} from "../lifecycleRules.js";
import type { ChainChange, ChainChangeApplied } from "../store.js";
import type { BlockApplied, PreconfirmedStored } from "../types.js";
import { UNSETTLED_STATUS_SQL } from "./listTestsAsEqualities.js";
import { createLogWriter } from "./logWriter.js";
import type { SyncedRanges } from "./syncedRanges.js";

/**
 * The lifecycle of stored logs on SQLite: the statements that carry out the plans of
 * lifecycleRules.ts (the rules themselves are there), and the transitions of one statement. Each
 * method is meant to run inside ONE transaction of the caller, so a reader never sees half a transition.
 */
export function createSqliteLifecycle(db: Database) {
  const writer = createLogWriter(db);
  const findConfirmed = db.prepare(`
    SELECT id FROM logs WHERE block_number = ? AND log_index = ? AND tx_hash = ? AND block_hash = ?`);
  const promote = db.prepare(`
    UPDATE logs SET status = @status, block_hash = @blockHash, block_number = @blockNumber, block_timestamp = @blockTimestamp,
      tx_index = @txIndex, log_index = @logIndex, confirmed_at = @now, removed_at = NULL,
      finalized_at = CASE WHEN @status = 'finalized' THEN @now ELSE NULL END
    WHERE id = @id`);
  const keepPreconfirmedAt = db.prepare(
    "UPDATE logs SET preconfirmed_at = COALESCE(preconfirmed_at, ?) WHERE id = ?",
  );
  const deleteTransfer = db.prepare("DELETE FROM transfers WHERE log_id = ?");
  const deleteAuthorization = db.prepare("DELETE FROM authorization_events WHERE log_id = ?");
  const deleteLog = db.prepare("DELETE FROM logs WHERE id = ?");
  // Every live or announced row with this content, found by content (twins are matched in
  // decode/preconfirmedTwins.ts): pre-confirmed and dropped ones are twin candidates; confirmed and
  // finalized ones make a late pre-confirmation old news. Rows that can still change are found through
  // logs_unsettled_by_tx_tail (schemas v8 and v9: the condition is repeated word for word so SQLite uses it).
  const CONTENT = `tx_hash = @txHash AND address = @address AND topic0 = @topic0 AND topic1 IS @topic1 AND topic2 IS @topic2
      AND topic3 IS @topic3 AND data = @data`;
  const COLUMNS =
    "id, status, block_number AS blockNumber, tx_log_position AS txLogPosition, log_index AS logIndex, preconfirmed_at AS preconfirmedAt";
  const findUnsettledSameContent = db.prepare(`
    SELECT ${COLUMNS} FROM logs
    WHERE substr(tx_hash, 51, 16) = substr(@txHash, 51, 16) AND ${CONTENT} AND ${UNSETTLED_STATUS_SQL}`);
  const finalizedSameContent = createFinalizedLookup(
    db,
    `SELECT ${COLUMNS} FROM logs INDEXED BY logs_by_tx WHERE ${CONTENT} AND status = 'finalized'`,
  );
  const unsettledSameContent = (row: LogRow) =>
    findUnsettledSameContent.all(twinContent(row)) as StoredTwin[];
  const sameContent = (row: LogRow): StoredTwin[] => [
    ...unsettledSameContent(row),
    ...(finalizedSameContent.all(twinContent(row)) as StoredTwin[]),
  ];
  const moveAnnounced = db.prepare(`
    UPDATE logs SET status = 'preconfirmed', block_number = @blockNumber, block_timestamp = @blockTimestamp, tx_index = @txIndex,
      log_index = @logIndex, tx_log_position = @txLogPosition, removed_at = NULL
    WHERE id = @id`);
  const unlanded = db.prepare(`
    SELECT id, tx_hash AS txHash FROM logs WHERE status = 'preconfirmed' AND block_number <= ?`);
  const dropOne = db.prepare(`UPDATE logs SET status = 'dropped', removed_at = ? WHERE id = ?`);
  const removeBlock = db.prepare(`
    UPDATE logs SET status = 'removed', removed_at = ? WHERE block_number = ? AND block_hash = ? AND status IN ('confirmed', 'finalized')`);
  const removeOtherBranches = db.prepare(`
    UPDATE logs SET status = 'removed', removed_at = ? WHERE block_number = ? AND block_hash != ? AND status IN ('confirmed', 'finalized')`);
  const removeOne = db.prepare(`
    UPDATE logs SET status = 'removed', removed_at = ? WHERE block_number = ? AND log_index = ? AND block_hash = ? AND status IN ('confirmed', 'finalized')`);
  const finalize = db.prepare(`
    UPDATE logs SET status = 'finalized', finalized_at = ? WHERE status = 'confirmed' AND block_number <= ?`);
  const unsettledBlocks = db.prepare(`
    SELECT DISTINCT block_number AS number, block_hash AS hash FROM logs WHERE status = 'confirmed' ORDER BY block_number`);

  const statements: Omit<LifecycleStatements, "addSynced"> = {
    sameContent: ({ row, finalized }) => (finalized ? sameContent(row) : unsettledSameContent(row)),
    move: ({ twin, row }) => {
      moveAnnounced.run({
        id: twin.id,
        blockNumber: row.blockNumber,
        blockTimestamp: row.blockTimestamp,
        txIndex: row.transactionIndex,
        logIndex: row.logIndex,
        txLogPosition: row.txLogPosition,
      });
    },
    findConfirmed: ({ row }) =>
      (
        findConfirmed.get(row.blockNumber, row.logIndex, row.transactionHash, row.blockHash) as
          { id: number } | undefined
      )?.id,
    fold: ({ twin, into }) => {
      keepPreconfirmedAt.run(twin.preconfirmedAt, into);
      deleteTransfer.run(twin.id);
      deleteAuthorization.run(twin.id);
      deleteLog.run(twin.id);
    },
    promote: ({ twin, row, now }) => {
      promote.run({
        id: twin.id,
        status: row.status,
        blockHash: row.blockHash,
        blockNumber: row.blockNumber,
        blockTimestamp: row.blockTimestamp,
        txIndex: row.transactionIndex,
        logIndex: row.logIndex,
        now,
      });
    },
    insert: ({ rows, now }) => writer.insertRows(rows, now),
    unlanded: ({ blockNumber }) => unlanded.all(blockNumber) as UnlandedRow[],
    drop: ({ id, now }) => dropOne.run(now, id).changes,
    removeBlock: ({ block, now }) => removeBlock.run(now, block.number, block.hash).changes,
    removeOtherBranches: ({ blockNumber, canonicalHash, now }) =>
      removeOtherBranches.run(now, blockNumber, canonicalHash).changes,
  };
  /** The statements, with synced ranges recorded where the plan asks (a chain change only). */
  const withSynced = (synced?: Pick<SyncedRanges, "add">): LifecycleStatements => ({
    ...statements,
    addSynced: ({ token, range }) => {
      if (synced === undefined)
        throw new Error(
          "lifecycle: a plan recorded a synced range without synced ranges to record it in",
        );
      synced.add(token, range);
    },
  });
  const outsideChainChanges = withSynced();

  return {
    /** The reader indexes were built (readerIndexes.ts): finalized rows can be looked up again. */
    readerIndexesBuilt: () => finalizedSameContent.indexBuilt(),
    /** Stores pre-confirmed rows (lifecycleRules.ts preconfirmedPlan). */
    insertPreconfirmed: (rows: readonly LogRow[], now: number): PreconfirmedStored =>
      runLifecyclePlan(preconfirmedPlan(rows, now), outsideChainChanges),

    /** Transactions with pre-confirmed rows at or below `blockNumber` (candidates for a drop once that block is applied). */
    preconfirmedThrough(blockNumber: number): Set<Hex> {
      return new Set((unlanded.all(blockNumber) as UnlandedRow[]).map((r) => r.txHash));
    },

    /** Applies one canonical block's logs (lifecycleRules.ts canonicalBlockPlan). */
    applyCanonicalBlock: (
      blockNumber: number,
      rows: readonly LogRow[],
      now: number,
      stillPending?: ReadonlySet<Hex>,
    ): BlockApplied =>
      runLifecyclePlan(
        canonicalBlockPlan(blockNumber, rows, now, stillPending),
        outsideChainChanges,
      ),

    /** Applies a change of the canonical chain (lifecycleRules.ts chainChangePlan), its ranges recorded in `synced`. */
    applyChainChange: (
      change: ChainChange,
      now: number,
      synced: Pick<SyncedRanges, "add">,
    ): ChainChangeApplied => runLifecyclePlan(chainChangePlan(change, now), withSynced(synced)),

    /** Flags every log of an orphaned block as removed (kept, with when). */
    removeBlock: (block: { number: number; hash: Hex }, now: number): number =>
      statements.removeBlock({ block, now }),

    /** Honours one `removed: true` log from a `logs` subscription. */
    removeLog(log: { blockNumber: number; blockHash: Hex; logIndex: number }, now: number): number {
      return removeOne.run(now, log.blockNumber, log.logIndex, log.blockHash).changes;
    },

    /** Confirmed rows at or below `blockNumber` become finalized. */
    finalizeThrough(blockNumber: number, now: number): number {
      return finalize.run(now, blockNumber).changes;
    },

    /** Blocks holding confirmed (not yet final) rows: after a restart they must be checked against the chain. */
    unsettledBlocks(): Array<{ number: number; hash: Hex }> {
      return unsettledBlocks.all() as Array<{ number: number; hash: Hex }>;
    },
  };
}

export type Lifecycle = ReturnType<typeof createSqliteLifecycle>;

/**
 * A lookup of finalized rows through `logs_by_tx`, the full-hash reader index. While a bulk backfill
 * has dropped that index (readerIndexes.ts) the lookup finds nothing instead of scanning the table:
 * it only serves a pre-confirmation announced again after its log was finalized, and a bulk load
 * writes history far below the pending block. `INDEXED BY` makes SQLite refuse, never scan. Once
 * refused it stays empty, without preparing again for every row, until `indexBuilt` (only this
 * process, the one writer, builds the reader indexes).
 */
function createFinalizedLookup(db: Database, sql: string) {
  let statement: Statement | undefined;
  let missing = false;
  return {
    all(params: object): unknown[] {
      if (missing) return [];
      try {
        statement ??= db.prepare(sql);
        return statement.all(params);
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith("no such index"))) throw error;
        statement = undefined;
        missing = true;
        return [];
      }
    },
    indexBuilt(): void {
      missing = false;
    },
  };
}
