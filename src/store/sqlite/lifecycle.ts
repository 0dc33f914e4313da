import type { Database, Statement } from "better-sqlite3";
import type { Hex } from "viem";
import type { LogRow, LogStatus } from "../../decode/logRow.js";
import { pickTwin, twinContent, type TwinCandidate } from "../../decode/preconfirmedTwins.js";
import { createLogWriter } from "./logWriter.js";
import { UNSETTLED_STATUS_SQL } from "./migrations/schemaV9.js";
import type { BlockApplied, PreconfirmedStored } from "../types.js";

/**
 * The lifecycle transitions of stored logs. Each method is meant to run inside ONE transaction of
 * the caller, so a reader never sees half a transition:
 *   preconfirmed -> confirmed (twin found in a canonical block) -> finalized;
 *   preconfirmed -> dropped (its block became canonical without it and the pending view no longer
 *   holds it; the node never retracts);
 *   preconfirmed | dropped -> preconfirmed at a later block (announced again: the pending block was rebuilt);
 *   confirmed -> removed (its block was reorged out). Nothing is ever deleted except a
 *   pre-confirmed twin merged into the confirmed row that already stood for the same log.
 */
export function createLifecycle(db: Database) {
  const writer = createLogWriter(db);
  const findConfirmed = db.prepare(`
    SELECT id FROM logs WHERE block_number = ? AND log_index = ? AND tx_hash = ? AND block_hash = ?`);
  const promote = db.prepare(`
    UPDATE logs SET status = @status, block_hash = @blockHash, block_number = @blockNumber, block_timestamp = @blockTimestamp,
      tx_index = @txIndex, log_index = @logIndex, confirmed_at = @now, removed_at = NULL,
      finalized_at = CASE WHEN @status = 'finalized' THEN @now ELSE NULL END
    WHERE id = @id`);
  const keepPreconfirmedAt = db.prepare("UPDATE logs SET preconfirmed_at = COALESCE(preconfirmed_at, ?) WHERE id = ?");
  const deleteTransfer = db.prepare("DELETE FROM transfers WHERE log_id = ?");
  const deleteAuthorization = db.prepare("DELETE FROM authorization_events WHERE log_id = ?");
  const deleteLog = db.prepare("DELETE FROM logs WHERE id = ?");
  // Every live or announced row with this content, found by content (twins are matched in
  // decode/preconfirmedTwins.ts): pre-confirmed and dropped ones are twin candidates; confirmed and
  // finalized ones make a late pre-confirmation old news. Rows that can still change are found through
  // logs_unsettled_by_tx_tail (schemas v8 and v9: the condition is repeated word for word so SQLite uses it).
  const CONTENT = `tx_hash = @txHash AND address = @address AND topic0 = @topic0 AND topic1 IS @topic1 AND topic2 IS @topic2
      AND topic3 IS @topic3 AND data = @data`;
  const COLUMNS = "id, status, block_number AS blockNumber, tx_log_position AS txLogPosition, log_index AS logIndex, preconfirmed_at AS preconfirmedAt";
  const findUnsettledSameContent = db.prepare(`
    SELECT ${COLUMNS} FROM logs
    WHERE substr(tx_hash, 51, 16) = substr(@txHash, 51, 16) AND ${CONTENT} AND ${UNSETTLED_STATUS_SQL}`);
  const finalizedSameContent = createFinalizedLookup(db, `SELECT ${COLUMNS} FROM logs INDEXED BY logs_by_tx WHERE ${CONTENT} AND status = 'finalized'`);
  type Announced = TwinCandidate & { status: LogStatus; blockNumber: number };
  const unsettledSameContent = (row: LogRow) => findUnsettledSameContent.all(twinContent(row)) as Announced[];
  const sameContent = (row: LogRow): Announced[] => [...unsettledSameContent(row), ...(finalizedSameContent.all(twinContent(row)) as Announced[])];
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

  return {
    /** The reader indexes were built (readerIndexes.ts): finalized rows can be looked up again. */
    readerIndexesBuilt: () => finalizedSameContent.indexBuilt(),
    /**
     * Stores pre-confirmed rows. A log already confirmed, or already pre-confirmed for this block,
     * changes nothing; one announced for a later block than stored (or stored as dropped) moves its
     * row there, keeping `preconfirmed_at`; one announced for an earlier block than stored is a stale
     * re-read of the pending view and is ignored.
     */
    insertPreconfirmed(rows: readonly LogRow[], now: number): PreconfirmedStored {
      const fresh: LogRow[] = [];
      let moved = 0;
      let revived = 0;
      for (const row of rows) {
        const announced = sameContent(row);
        if (announced.some((a) => a.status === "confirmed" || a.status === "finalized" || a.blockNumber > row.blockNumber)) continue;
        const twin = pickTwin(row, announced.filter((a) => a.blockNumber < row.blockNumber));
        if (twin === undefined) {
          fresh.push(row);
          continue;
        }
        moveAnnounced.run({
          id: twin.id,
          blockNumber: row.blockNumber,
          blockTimestamp: row.blockTimestamp,
          txIndex: row.transactionIndex,
          logIndex: row.logIndex,
          txLogPosition: row.txLogPosition,
        });
        moved++;
        if (twin.status === "dropped") revived++;
      }
      return { ...writer.insertRows(fresh, now), moved, revived };
    },

    /** Transactions with pre-confirmed rows at or below `blockNumber` (candidates for a drop once that block is applied). */
    preconfirmedThrough(blockNumber: number): Set<Hex> {
      return new Set((unlanded.all(blockNumber) as Array<{ txHash: Hex }>).map((r) => r.txHash));
    },

    /**
     * Applies one canonical block's logs: promotes pre-confirmed twins, inserts the rest, and marks
     * as dropped every pre-confirmation of this or an earlier block that did not land, unless its
     * transaction is in `stillPending` (the pending view holds it for a later block).
     */
    applyCanonicalBlock(blockNumber: number, rows: readonly LogRow[], now: number, stillPending: ReadonlySet<Hex> = new Set()): BlockApplied {
      const result: BlockApplied = { inserted: 0, promoted: 0, dropped: 0, duplicates: 0, leadTimesMs: [], byEvent: [] };
      const fresh: LogRow[] = [];
      for (const row of rows) {
        const twin = pickTwin(row, unsettledSameContent(row).filter((a) => a.status === "preconfirmed" || a.status === "dropped"));
        if (twin === undefined) {
          fresh.push(row);
          continue;
        }
        const existing = findConfirmed.get(row.blockNumber, row.logIndex, row.transactionHash, row.blockHash) as { id: number } | undefined;
        if (existing !== undefined) {
          // The confirmed row is already there (e.g. from a backfill): fold the twin's history into it.
          keepPreconfirmedAt.run(twin.preconfirmedAt, existing.id);
          deleteTransfer.run(twin.id);
          deleteAuthorization.run(twin.id);
          deleteLog.run(twin.id);
          result.duplicates++;
          continue;
        }
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
        result.promoted++;
        if (twin.preconfirmedAt !== null) result.leadTimesMs.push(now - twin.preconfirmedAt);
      }
      const counts = writer.insertRows(fresh, now);
      result.inserted = counts.inserted;
      result.byEvent = counts.byEvent;
      result.duplicates += counts.duplicates;
      for (const row of unlanded.all(blockNumber) as Array<{ id: number; txHash: Hex }>) {
        if (!stillPending.has(row.txHash)) result.dropped += dropOne.run(now, row.id).changes;
      }
      return result;
    },

    /** Flags every log of an orphaned block as removed (kept, with when). */
    removeBlock(block: { number: number; hash: Hex }, now: number): number {
      return removeBlock.run(now, block.number, block.hash).changes;
    },

    /** Flags removed every live row at `blockNumber` whose block is not `canonicalHash` (another branch). */
    removeOtherBranches(blockNumber: number, canonicalHash: Hex, now: number): number {
      return removeOtherBranches.run(now, blockNumber, canonicalHash).changes;
    },

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

export type Lifecycle = ReturnType<typeof createLifecycle>;

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
