import type pg from "pg";
import type { Hex } from "viem";
import { contiguousEnd, mergeRanges, type BlockRange } from "../../blockRanges.js";
import type { LogRow, LogStatus } from "../../decode/logRow.js";
import { pickTwin, twinContent, type TwinCandidate } from "../../decode/preconfirmedTwins.js";
import type { BlockApplied, PreconfirmedStored } from "../types.js";
import { insertLogRows } from "./rowWriter.js";
import { packRows } from "../../decode/packedRows.js";
import { UNSETTLED_STATUS_LIST_SQL } from "../sqlite/migrations/schemaV8.js";

/**
 * The lifecycle transitions of src/store/lifecycle.ts over a Postgres connection, statement for
 * statement (see there for the rules). Each runs inside the caller's transaction.
 */
export function postgresLifecycle(client: pg.ClientBase) {
  /**
   * Rows with this content, as the SQLite lifecycle finds them: those that can still change through
   * logs_unsettled_by_tx_tail (schema 8); finalized ones (`finalized`) through the reader index
   * logs_by_tx, and only while it is usable (a bulk backfill drops it, then builds it concurrently: no
   * sequential scan meanwhile).
   */
  async function sameContent(row: LogRow, finalized: boolean): Promise<Array<TwinCandidate & { status: LogStatus; blockNumber: number }>> {
    const c = twinContent(row);
    const content = `tx_hash = $1 AND address = $2 AND topic0 = $3 AND topic1 IS NOT DISTINCT FROM $4 AND topic2 IS NOT DISTINCT FROM $5
         AND topic3 IS NOT DISTINCT FROM $6 AND data = $7`;
    const columns = `id, status, block_number AS "blockNumber", tx_log_position AS "txLogPosition", log_index AS "logIndex", preconfirmed_at AS "preconfirmedAt"`;
    const unsettled = `SELECT ${columns} FROM logs WHERE substr(tx_hash, 51, 16) = substr($1, 51, 16) AND ${content} AND status IN ${UNSETTLED_STATUS_LIST_SQL}`;
    // Valid, not only present: while a build runs concurrently the index exists but the planner cannot use it.
    const settled = `SELECT ${columns} FROM logs WHERE ${content} AND status = 'finalized'
      AND EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('logs_by_tx') AND indisvalid)`;
    const { rows } = await client.query(finalized ? `${unsettled} UNION ALL ${settled}` : unsettled, [c.txHash, c.address, c.topic0, c.topic1, c.topic2, c.topic3, c.data]);
    return rows;
  }

  return {
    async insertPreconfirmed(rows: readonly LogRow[], now: number): Promise<PreconfirmedStored> {
      const fresh: LogRow[] = [];
      let moved = 0;
      let revived = 0;
      for (const row of rows) {
        const announced = await sameContent(row, true);
        if (announced.some((a) => a.status === "confirmed" || a.status === "finalized" || a.blockNumber > row.blockNumber)) continue;
        const twin = pickTwin(row, announced.filter((a) => a.blockNumber < row.blockNumber));
        if (twin === undefined) {
          fresh.push(row);
          continue;
        }
        await client.query(
          `UPDATE logs SET status = 'preconfirmed', block_number = $2, block_timestamp = $3, tx_index = $4, log_index = $5, tx_log_position = $6, removed_at = NULL
           WHERE id = $1`,
          [twin.id, row.blockNumber, row.blockTimestamp, row.transactionIndex, row.logIndex, row.txLogPosition],
        );
        moved++;
        if (twin.status === "dropped") revived++;
      }
      return { ...(await insertLogRows(client, packRows(fresh), now)), moved, revived };
    },

    async preconfirmedThrough(blockNumber: number): Promise<Set<Hex>> {
      const { rows } = await client.query("SELECT tx_hash FROM logs WHERE status = 'preconfirmed' AND block_number <= $1", [blockNumber]);
      return new Set(rows.map((r: { tx_hash: Hex }) => r.tx_hash));
    },

    async applyCanonicalBlock(blockNumber: number, rows: readonly LogRow[], now: number, stillPending: ReadonlySet<Hex> = new Set()): Promise<BlockApplied> {
      const result: BlockApplied = { inserted: 0, promoted: 0, dropped: 0, duplicates: 0, leadTimesMs: [], byEvent: [] };
      const fresh: LogRow[] = [];
      for (const row of rows) {
        const twin = pickTwin(row, (await sameContent(row, false)).filter((a) => a.status === "preconfirmed" || a.status === "dropped"));
        if (twin === undefined) {
          fresh.push(row);
          continue;
        }
        const existing = await client.query("SELECT id FROM logs WHERE block_number = $1 AND log_index = $2 AND tx_hash = $3 AND block_hash = $4", [
          row.blockNumber, row.logIndex, row.transactionHash, row.blockHash,
        ]);
        if (existing.rows.length > 0) {
          // The confirmed row is already there (e.g. from a backfill): fold the twin's history into it.
          await client.query("UPDATE logs SET preconfirmed_at = COALESCE(preconfirmed_at, $1) WHERE id = $2", [twin.preconfirmedAt, existing.rows[0].id]);
          await client.query("DELETE FROM transfers WHERE log_id = $1", [twin.id]);
          await client.query("DELETE FROM authorization_events WHERE log_id = $1", [twin.id]);
          await client.query("DELETE FROM logs WHERE id = $1", [twin.id]);
          result.duplicates++;
          continue;
        }
        await client.query(
          `UPDATE logs SET status = $2, block_hash = $3, block_number = $4, block_timestamp = $5, tx_index = $6, log_index = $7,
             confirmed_at = $8, removed_at = NULL, finalized_at = CASE WHEN $2 = 'finalized' THEN $8::bigint ELSE NULL END
           WHERE id = $1`,
          [twin.id, row.status, row.blockHash, row.blockNumber, row.blockTimestamp, row.transactionIndex, row.logIndex, now],
        );
        result.promoted++;
        if (twin.preconfirmedAt !== null) result.leadTimesMs.push(now - twin.preconfirmedAt);
      }
      const counts = await insertLogRows(client, packRows(fresh), now);
      result.inserted = counts.inserted;
      result.byEvent = counts.byEvent;
      result.duplicates += counts.duplicates;
      const unlanded = await client.query("SELECT id, tx_hash FROM logs WHERE status = 'preconfirmed' AND block_number <= $1", [blockNumber]);
      for (const row of unlanded.rows as Array<{ id: number; tx_hash: Hex }>) {
        if (stillPending.has(row.tx_hash)) continue;
        result.dropped += (await client.query("UPDATE logs SET status = 'dropped', removed_at = $1 WHERE id = $2", [now, row.id])).rowCount ?? 0;
      }
      return result;
    },

    async removeBlock(block: { number: number; hash: Hex }, now: number): Promise<number> {
      const r = await client.query(
        "UPDATE logs SET status = 'removed', removed_at = $1 WHERE block_number = $2 AND block_hash = $3 AND status IN ('confirmed', 'finalized')",
        [now, block.number, block.hash],
      );
      return r.rowCount ?? 0;
    },

    async removeOtherBranches(blockNumber: number, canonicalHash: Hex, now: number): Promise<number> {
      const r = await client.query(
        "UPDATE logs SET status = 'removed', removed_at = $1 WHERE block_number = $2 AND block_hash <> $3 AND status IN ('confirmed', 'finalized')",
        [now, blockNumber, canonicalHash],
      );
      return r.rowCount ?? 0;
    },

    async removeLog(log: { blockNumber: number; blockHash: Hex; logIndex: number }, now: number): Promise<number> {
      const r = await client.query(
        "UPDATE logs SET status = 'removed', removed_at = $1 WHERE block_number = $2 AND log_index = $3 AND block_hash = $4 AND status IN ('confirmed', 'finalized')",
        [now, log.blockNumber, log.logIndex, log.blockHash],
      );
      return r.rowCount ?? 0;
    },

    async finalizeThrough(blockNumber: number, now: number): Promise<number> {
      const r = await client.query("UPDATE logs SET status = 'finalized', finalized_at = $1 WHERE status = 'confirmed' AND block_number <= $2", [now, blockNumber]);
      return r.rowCount ?? 0;
    },

    async unsettledBlocks(): Promise<Array<{ number: number; hash: Hex }>> {
      const { rows } = await client.query("SELECT DISTINCT block_number AS number, block_hash AS hash FROM logs WHERE status = 'confirmed' ORDER BY block_number");
      return rows;
    },
  };
}

/** Synced ranges (see src/store/syncedRanges.ts) over a Postgres connection. */
export function postgresSyncedRanges(client: pg.ClientBase, chainId: number) {
  async function list(token: Hex): Promise<BlockRange[]> {
    const { rows } = await client.query(
      `SELECT from_block AS "from", to_block AS "to" FROM synced_ranges WHERE chain_id = $1 AND token = $2 ORDER BY from_block`,
      [chainId, token],
    );
    return rows;
  }
  return {
    list,
    checkpoint: async (token: Hex, startBlock: number) => contiguousEnd(await list(token), startBlock),
    /** Records [from, to] as indexed for `token`, merging with neighbours. Call inside the window's transaction. */
    async add(token: Hex, range: BlockRange): Promise<void> {
      // Two windows may commit side by side (postgresStore.ts): the read-merge-write of the ranges is
      // serialized by a lock held to the end of the transaction, taken after every row lock.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('flashindex:synced:' || current_schema()))");
      const touching = (await list(token)).filter((r) => r.from <= range.to + 1 && r.to + 1 >= range.from);
      const [merged] = mergeRanges([...touching, range]);
      await client.query("DELETE FROM synced_ranges WHERE chain_id = $1 AND token = $2 AND from_block <= $3 AND to_block >= $4", [
        chainId, token, merged!.to + 1, merged!.from - 1,
      ]);
      await client.query("INSERT INTO synced_ranges (chain_id, token, from_block, to_block) VALUES ($1, $2, $3, $4)", [chainId, token, merged!.from, merged!.to]);
    },
  };
}
