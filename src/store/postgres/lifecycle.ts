import type pg from "pg";
import type { Hex } from "viem";
import type { LogRow } from "../../rows/logRow.js";
import { twinContent } from "../../decode/preconfirmedTwins.js";
import {
  chainChangePlan,
  preconfirmedPlan,
  runLifecyclePlanAsync,
  type AsyncLifecycleStatements,
  type StoredTwin,
} from "../lifecycleRules.js";
import type { ChainChange, ChainChangeApplied } from "../store.js";
import type { PreconfirmedStored } from "../types.js";
import { insertLogRows } from "./rowWriter.js";
import { packRows } from "../../rows/packedRows.js";
import { UNSETTLED_STATUS_LIST_SQL } from "../liveStatus.js";
import { createPostgresSyncedRanges } from "./syncedRanges.js";

/**
 * The lifecycle of stored logs over a Postgres connection: the statements that carry out the plans
 * of lifecycleRules.ts (the rules themselves are there), and the transitions of one statement, as
 * SQLite's (sqlite/lifecycle.ts). Each runs inside the caller's transaction.
 */
export function createPostgresLifecycle(client: pg.ClientBase, chainId: number) {
  /**
   * Rows with this content, as the SQLite lifecycle finds them: those that can still change through
   * logs_unsettled_by_tx_tail (schema 8); finalized ones (`finalized`) through the reader index
   * logs_by_tx, and only while it is usable (a bulk backfill drops it, then builds it concurrently: no
   * sequential scan meanwhile).
   */
  async function sameContent(row: LogRow, finalized: boolean): Promise<StoredTwin[]> {
    const c = twinContent(row);
    const content = `tx_hash = $1 AND address = $2 AND topic0 = $3 AND topic1 IS NOT DISTINCT FROM $4 AND topic2 IS NOT DISTINCT FROM $5
         AND topic3 IS NOT DISTINCT FROM $6 AND data = $7`;
    const columns = `id, status, block_number AS "blockNumber", tx_log_position AS "txLogPosition", log_index AS "logIndex", preconfirmed_at AS "preconfirmedAt"`;
    const unsettled = `SELECT ${columns} FROM logs WHERE substr(tx_hash, 51, 16) = substr($1, 51, 16) AND ${content} AND status IN ${UNSETTLED_STATUS_LIST_SQL}`;
    // Valid, not only present: while a build runs concurrently the index exists but the planner cannot use it.
    const settled = `SELECT ${columns} FROM logs WHERE ${content} AND status = 'finalized'
      AND EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('logs_by_tx') AND indisvalid)`;
    const { rows } = await client.query(
      finalized ? `${unsettled} UNION ALL ${settled}` : unsettled,
      [c.txHash, c.address, c.topic0, c.topic1, c.topic2, c.topic3, c.data],
    );
    return rows;
  }

  const changed = async (sql: string, values: unknown[]): Promise<number> =>
    (await client.query(sql, values)).rowCount ?? 0;

  const statements: AsyncLifecycleStatements = {
    sameContent: ({ row, finalized }) => sameContent(row, finalized),
    move: async ({ twin, row }) => {
      await client.query(
        `UPDATE logs SET status = 'preconfirmed', block_number = $2, block_timestamp = $3, tx_index = $4, log_index = $5, tx_log_position = $6, removed_at = NULL
         WHERE id = $1`,
        [
          twin.id,
          row.blockNumber,
          row.blockTimestamp,
          row.transactionIndex,
          row.logIndex,
          row.txLogPosition,
        ],
      );
    },
    findConfirmed: async ({ row }) => {
      const existing = await client.query(
        "SELECT id FROM logs WHERE block_number = $1 AND log_index = $2 AND tx_hash = $3 AND block_hash = $4",
        [row.blockNumber, row.logIndex, row.transactionHash, row.blockHash],
      );
      return existing.rows[0]?.id;
    },
    fold: async ({ twin, into }) => {
      await client.query(
        "UPDATE logs SET preconfirmed_at = COALESCE(preconfirmed_at, $1) WHERE id = $2",
        [twin.preconfirmedAt, into],
      );
      await client.query("DELETE FROM transfers WHERE log_id = $1", [twin.id]);
      await client.query("DELETE FROM authorization_events WHERE log_id = $1", [twin.id]);
      await client.query("DELETE FROM logs WHERE id = $1", [twin.id]);
    },
    promote: async ({ twin, row, now }) => {
      await client.query(
        `UPDATE logs SET status = $2, block_hash = $3, block_number = $4, block_timestamp = $5, tx_index = $6, log_index = $7,
           confirmed_at = $8, removed_at = NULL, finalized_at = CASE WHEN $2 = 'finalized' THEN $8::bigint ELSE NULL END
         WHERE id = $1`,
        [
          twin.id,
          row.status,
          row.blockHash,
          row.blockNumber,
          row.blockTimestamp,
          row.transactionIndex,
          row.logIndex,
          now,
        ],
      );
    },
    insert: ({ rows, now }) => insertLogRows(client, packRows(rows), now),
    unlanded: async ({ blockNumber }) => {
      const { rows } = await client.query(
        `SELECT id, tx_hash AS "txHash" FROM logs WHERE status = 'preconfirmed' AND block_number <= $1`,
        [blockNumber],
      );
      return rows;
    },
    drop: ({ id, now }) =>
      changed("UPDATE logs SET status = 'dropped', removed_at = $1 WHERE id = $2", [now, id]),
    removeBlock: ({ block, now }) =>
      changed(
        "UPDATE logs SET status = 'removed', removed_at = $1 WHERE block_number = $2 AND block_hash = $3 AND status IN ('confirmed', 'finalized')",
        [now, block.number, block.hash],
      ),
    removeOtherBranches: ({ blockNumber, canonicalHash, now }) =>
      changed(
        "UPDATE logs SET status = 'removed', removed_at = $1 WHERE block_number = $2 AND block_hash <> $3 AND status IN ('confirmed', 'finalized')",
        [now, blockNumber, canonicalHash],
      ),
    addSynced: ({ token, range }) => createPostgresSyncedRanges(client, chainId).add(token, range),
  };

  return {
    insertPreconfirmed: (rows: readonly LogRow[], now: number): Promise<PreconfirmedStored> =>
      runLifecyclePlanAsync(preconfirmedPlan(rows, now), statements),

    async preconfirmedThrough(blockNumber: number): Promise<Set<Hex>> {
      const { rows } = await client.query(
        "SELECT tx_hash FROM logs WHERE status = 'preconfirmed' AND block_number <= $1",
        [blockNumber],
      );
      return new Set(rows.map((r: { tx_hash: Hex }) => r.tx_hash));
    },

    applyChainChange: (change: ChainChange, now: number): Promise<ChainChangeApplied> =>
      runLifecyclePlanAsync(chainChangePlan(change, now), statements),

    removeLog: (
      log: { blockNumber: number; blockHash: Hex; logIndex: number },
      now: number,
    ): Promise<number> =>
      changed(
        "UPDATE logs SET status = 'removed', removed_at = $1 WHERE block_number = $2 AND log_index = $3 AND block_hash = $4 AND status IN ('confirmed', 'finalized')",
        [now, log.blockNumber, log.logIndex, log.blockHash],
      ),

    finalizeThrough: (blockNumber: number, now: number): Promise<number> =>
      changed(
        "UPDATE logs SET status = 'finalized', finalized_at = $1 WHERE status = 'confirmed' AND block_number <= $2",
        [now, blockNumber],
      ),

    async unsettledBlocks(): Promise<Array<{ number: number; hash: Hex }>> {
      const { rows } = await client.query(
        "SELECT DISTINCT block_number AS number, block_hash AS hash FROM logs WHERE status = 'confirmed' ORDER BY block_number",
      );
      return rows;
    },
  };
}
