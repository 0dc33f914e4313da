import type pg from "pg";
import type { Hex } from "viem";
import {
  NUMBER_AT,
  NUMBER_FIELDS,
  STRING_AT,
  STRING_FIELDS,
  unpackStrings,
  type PackedRows,
} from "../../rows/packedRows.js";
import type { EventCount, InsertCounts } from "../types.js";
import type { AttributedTransaction } from "../../decode/attributeTransaction.js";
import type { OperationLogRows, PackedAttribution } from "../../rows/packedAttribution.js";
import { unpackAttribution } from "../../rows/packedAttribution.js";
import { packAttribution } from "../../decode/packAttribution.js";

type Column = readonly [name: string, type: string];

/**
 * One multi-row INSERT of column arrays (`SELECT * FROM unnest($1::bigint[], …)`): one round trip
 * and one plan whatever the number of rows.
 */
async function insertColumns(
  client: pg.ClientBase,
  table: string,
  columns: readonly Column[],
  rows: readonly unknown[][],
  tail = "",
) {
  const arrays = columns.map((_, i) => arrayLiteral(rows, i));
  const sql = `INSERT INTO ${table} (${columns.map(([name]) => name).join(", ")})
    SELECT * FROM unnest(${columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")}) ${tail}`;
  return client.query(sql, arrays);
}

/** Elements that need no quoting in an array literal: hex, numbers, plain words (never the word NULL). */
const BARE_ELEMENT = /^[0-9A-Za-z_.x-]+$/;

/**
 * Column `i` of `rows` as a Postgres array literal (`{0xab,12,NULL}`), built here rather than by pg's
 * generic serialiser: nearly every value is hex or a number and goes in bare, the rest is quoted.
 */
export function arrayLiteral(rows: readonly unknown[][], i: number): string {
  const parts = new Array<string>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const value = rows[r]![i];
    if (value === null || value === undefined) parts[r] = "NULL";
    else {
      const text = elementText(value);
      parts[r] =
        BARE_ELEMENT.test(text) && text.toUpperCase() !== "NULL"
          ? text
          : `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
    }
  }
  return `{${parts.join(",")}}`;
}

/** An element's text. Every column here is a scalar: an object would go in as "[object Object]". */
function elementText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean")
    return String(value);
  throw new TypeError(`A Postgres array element must be a scalar, got ${typeof value}`);
}

const LOG_COLUMNS: readonly Column[] = [
  ["chain_id", "bigint"],
  ["address", "text"],
  ["topic0", "text"],
  ["topic1", "text"],
  ["topic2", "text"],
  ["topic3", "text"],
  ["data", "text"],
  ["block_number", "bigint"],
  ["block_hash", "text"],
  ["block_timestamp", "bigint"],
  ["tx_hash", "text"],
  ["tx_index", "integer"],
  ["log_index", "integer"],
  ["tx_log_position", "integer"],
  ["status", "text"],
  ["source", "text"],
  ["first_seen_at", "bigint"],
  ["preconfirmed_at", "bigint"],
  ["confirmed_at", "bigint"],
  ["finalized_at", "bigint"],
];
/** Per input row after its log's columns: the event name and its decoded fields (from/to/value, or authorizer/nonce). */
const EVENT_COLUMNS: readonly Column[] = [
  ["event", "text"],
  ["a1", "text"],
  ["a2", "text"],
  ["amount", "numeric"],
];
const INPUT_COLUMNS = [...LOG_COLUMNS, ...EVENT_COLUMNS];
const KEY = "block_number, log_index, tx_hash, block_hash";
const CARRIED =
  "i.block_number, i.block_hash, i.block_timestamp, i.tx_hash, i.tx_index, i.log_index, i.status";

/**
 * One statement stores a batch: the input as column arrays (`unnest`), the logs inserted with ON
 * CONFLICT DO NOTHING, and the decoded rows of exactly the logs that went in, joined back on the
 * unique key; it answers the inserted rows counted by event and status. One round trip, and no row
 * travels back to the client. A log listed twice in the batch is inserted once (DISTINCT ON).
 */
const INSERT_LOGS_SQL = `
WITH input AS (
  SELECT * FROM unnest(${INPUT_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")}) AS t(${INPUT_COLUMNS.map(([name]) => name).join(", ")})
),
inserted AS (
  INSERT INTO logs (${LOG_COLUMNS.map(([name]) => name).join(", ")})
  SELECT ${LOG_COLUMNS.map(([name]) => name).join(", ")} FROM input
  ON CONFLICT DO NOTHING
  RETURNING id, ${KEY}
),
matched AS (
  SELECT ins.id, i.* FROM inserted ins
  JOIN (SELECT DISTINCT ON (${KEY}) * FROM input) i USING (${KEY})
),
transfers_inserted AS (
  INSERT INTO transfers (log_id, chain_id, token, from_address, to_address, value, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status)
  SELECT i.id, i.chain_id, i.address, i.a1, i.a2, i.amount, ${CARRIED} FROM matched i WHERE i.event = 'transfer'
),
authorizations_inserted AS (
  INSERT INTO authorization_events (log_id, chain_id, token, authorizer, nonce, kind, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status)
  SELECT i.id, i.chain_id, i.address, i.a1, i.a2, CASE i.event WHEN 'authorization_used' THEN 'used' ELSE 'canceled' END, ${CARRIED}
  FROM matched i WHERE i.event <> 'transfer'
)
SELECT event, status, count(*)::integer AS logs FROM matched GROUP BY event, status`;

/** A batch of packed rows (rows/packedRows.ts) as the statement's parameters: one array literal per input column. */
function logRowParams(rows: PackedRows, now: number): string[] {
  // Column by column, straight into array-literal elements. Every value here is a validated hex
  // string, a number, a decimal string or one of our own words: none needs quoting (arrayLiteral
  // checks each element; at 24 columns a row that check was a tenth of the client's time).
  const t = unpackStrings(rows);
  const n = rows.numbers;
  const columns = INPUT_COLUMNS.map(() => new Array<string>(rows.count));
  const bare = (value: string | number | null) =>
    value === null || value === "" ? "NULL" : String(value);
  for (let r = 0, i = 0, k = 0; r < rows.count; r++, i += STRING_FIELDS, k += NUMBER_FIELDS) {
    const s = t[i + STRING_AT.status]!;
    const values = [
      n[k + NUMBER_AT.chainId]!,
      t[i + STRING_AT.address]!,
      t[i + STRING_AT.topic0]!,
      t[i + STRING_AT.topic1]!,
      t[i + STRING_AT.topic2]!,
      t[i + STRING_AT.topic3]!,
      t[i + STRING_AT.data]!,
      n[k + NUMBER_AT.blockNumber]!,
      t[i + STRING_AT.blockHash]!,
      n[k + NUMBER_AT.blockTimestamp]!,
      t[i + STRING_AT.txHash]!,
      n[k + NUMBER_AT.txIndex]!,
      n[k + NUMBER_AT.logIndex]!,
      n[k + NUMBER_AT.txLogPosition]!,
      s,
      t[i + STRING_AT.source]!,
      now,
      s === "preconfirmed" ? now : null,
      s === "confirmed" || s === "finalized" ? now : null,
      s === "finalized" ? now : null,
      t[i + STRING_AT.event]!,
      t[i + STRING_AT.first]!,
      t[i + STRING_AT.second]!,
      t[i + STRING_AT.value]!,
    ];
    for (let c = 0; c < values.length; c++) columns[c]![r] = bare(values[c]!);
  }
  return columns.map((parts) => `{${parts.join(",")}}`);
}

/**
 * Inserts packed rows into `logs` and their decoded table, skipping logs already stored (the unique
 * key), in one statement. Call inside a transaction.
 */
export async function insertLogRows(
  client: pg.ClientBase,
  rows: PackedRows,
  now: number,
): Promise<InsertCounts> {
  if (rows.count === 0) return { inserted: 0, duplicates: 0, byEvent: [] };
  const { rows: byEvent } = await client.query(INSERT_LOGS_SQL, logRowParams(rows, now));
  const counts = byEvent as EventCount[];
  const inserted = counts.reduce((sum, c) => sum + c.logs, 0);
  return { inserted, duplicates: rows.count - inserted, byEvent: counts };
}

const TRANSACTION_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"],
  ["chain_id", "bigint"],
  ["from_address", "text"],
  ["to_address", "text"],
  ["selector", "text"],
  ["input_bytes", "integer"],
  ["attribution", "text"],
  ["schema_id", "integer"],
  ["registry_address", "text"],
  ["registry_chain_id", "text"],
  ["malformed_reason", "text"],
  ["registry_error", "text"],
  ["user_operations", "integer"],
  ["fetched_at", "bigint"],
];
const USER_OPERATION_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"],
  ["op_index", "integer"],
  ["sender", "text"],
  ["aggregator", "text"],
  ["attribution", "text"],
  ["schema_id", "integer"],
  ["malformed_reason", "text"],
  ["registry_error", "text"],
];
const CODE_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"],
  ["op_index", "integer"],
  ["position", "integer"],
  ["code", "text"],
  ["role", "text"],
  ["registry", "text"],
  ["registry_chain_id", "text"],
  ["registry_address", "text"],
];

/** Writes attribution rows as the SQLite attribution writer does; a transaction already stored is skipped. Call inside a transaction. */
export const insertAttributionRows = (
  client: pg.ClientBase,
  transactions: readonly AttributedTransaction[],
  now: number,
): Promise<number> => insertPackedAttribution(client, packAttribution(transactions, now));

const OPERATION_LOG_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"],
  ["token", "text"],
  ["tx_log_position", "integer"],
  ["op_index", "integer"],
];

/** A bundle's mapping state and its logs' operations (operationLogRows.ts), for bundles not mapped yet. */
async function insertOperationLogs(
  client: pg.ClientBase,
  { bundles, logs }: OperationLogRows,
): Promise<void> {
  if (bundles.length === 0) return;
  const set = await client.query(
    `UPDATE transactions t SET operation_logs = b.state, operation_logs_error = b.error
    FROM unnest($1::text[], $2::text[], $3::text[]) AS b (tx_hash, state, error)
    WHERE t.tx_hash = b.tx_hash AND t.user_operations > 0 AND t.operation_logs IS NULL RETURNING t.tx_hash`,
    [arrayLiteral(bundles, 0), arrayLiteral(bundles, 1), arrayLiteral(bundles, 2)],
  );
  const mapped = new Set((set.rows as Array<{ tx_hash: Hex }>).map((r) => r.tx_hash));
  const rows = logs.filter((row) => mapped.has(row[0]));
  if (rows.length > 0)
    await insertColumns(
      client,
      "user_operation_logs",
      OPERATION_LOG_COLUMNS,
      rows,
      "ON CONFLICT DO NOTHING",
    );
}

/** The same for packed attribution (a backfill window's, packed on the decode thread). */
export async function insertPackedAttribution(
  client: pg.ClientBase,
  packed: PackedAttribution,
): Promise<number> {
  const transactions = unpackAttribution(packed);
  if (transactions.length === 0) return 0;
  const inserted = await insertColumns(
    client,
    "transactions",
    TRANSACTION_COLUMNS,
    transactions.map((t) => t.transaction),
    "ON CONFLICT (tx_hash) DO NOTHING RETURNING tx_hash",
  );
  const fresh = new Set((inserted.rows as Array<{ tx_hash: Hex }>).map((r) => r.tx_hash));
  const operations: unknown[][] = [];
  const codes: unknown[][] = [];
  for (const t of transactions) {
    if (!fresh.delete(t.transaction[0] as Hex)) continue;
    operations.push(...t.userOperations);
    codes.push(...t.codes);
  }
  if (operations.length > 0)
    await insertColumns(
      client,
      "user_operations",
      USER_OPERATION_COLUMNS,
      operations,
      "ON CONFLICT DO NOTHING",
    );
  if (codes.length > 0)
    await insertColumns(client, "attribution_codes", CODE_COLUMNS, codes, "ON CONFLICT DO NOTHING");
  if (packed.operationLogs !== undefined) await insertOperationLogs(client, packed.operationLogs);
  return inserted.rowCount ?? 0;
}
