import type pg from "pg";
import type { Hex } from "viem";
import { eventName } from "../../decode/paymentEvents.js";
import type { LogRow } from "../../decode/logRow.js";
import { registryOfCode, type Attribution } from "../../decode/erc8021.js";
import type { AttributedTransaction } from "../attributionWriter.js";
import type { EventCount, InsertCounts } from "../logWriter.js";

/** op_index of the transaction's own calldata in attribution_codes. */
const OWN_CALLDATA = -1;

type Column = readonly [name: string, type: string];

/**
 * One multi-row INSERT of column arrays (`SELECT * FROM unnest($1::bigint[], …)`): one round trip
 * and one plan whatever the number of rows.
 */
async function insertColumns(client: pg.ClientBase, table: string, columns: readonly Column[], rows: readonly unknown[][], tail = "") {
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
      const text = String(value);
      parts[r] = BARE_ELEMENT.test(text) && text.toUpperCase() !== "NULL" ? text : `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
    }
  }
  return `{${parts.join(",")}}`;
}

const LOG_COLUMNS: readonly Column[] = [
  ["chain_id", "bigint"], ["address", "text"], ["topic0", "text"], ["topic1", "text"], ["topic2", "text"], ["topic3", "text"],
  ["data", "text"], ["block_number", "bigint"], ["block_hash", "text"], ["block_timestamp", "bigint"], ["tx_hash", "text"],
  ["tx_index", "integer"], ["log_index", "integer"], ["tx_log_position", "integer"], ["status", "text"], ["source", "text"],
  ["first_seen_at", "bigint"], ["preconfirmed_at", "bigint"], ["confirmed_at", "bigint"], ["finalized_at", "bigint"],
];
const CARRIED: readonly Column[] = [
  ["block_number", "bigint"], ["block_hash", "text"], ["block_timestamp", "bigint"], ["tx_hash", "text"], ["tx_index", "integer"],
  ["log_index", "integer"], ["status", "text"],
];
const TRANSFER_COLUMNS: readonly Column[] = [
  ["log_id", "bigint"], ["chain_id", "bigint"], ["token", "text"], ["from_address", "text"], ["to_address", "text"], ["value", "numeric"], ...CARRIED,
];
const AUTHORIZATION_COLUMNS: readonly Column[] = [
  ["log_id", "bigint"], ["chain_id", "bigint"], ["token", "text"], ["authorizer", "text"], ["nonce", "text"], ["kind", "text"], ...CARRIED,
];

const keyOf = (blockNumber: number, logIndex: number, txHash: string, blockHash: string) => `${blockNumber}:${logIndex}:${txHash}:${blockHash}`;

/**
 * Inserts decoded rows into `logs` and their decoded table, skipping logs already stored (the unique
 * key), in three statements. Call inside a transaction.
 */
export async function insertLogRows(client: pg.ClientBase, rows: readonly LogRow[], now: number): Promise<InsertCounts> {
  const counts: InsertCounts = { inserted: 0, duplicates: 0, byEvent: [] };
  if (rows.length === 0) return counts;
  const logValues = rows.map((row) => {
    const s = row.status;
    return [
      row.chainId, row.address, row.topics[0] ?? null, row.topics[1] ?? null, row.topics[2] ?? null, row.topics[3] ?? null, row.data,
      row.blockNumber, row.blockHash, row.blockTimestamp, row.transactionHash, row.transactionIndex, row.logIndex, row.txLogPosition,
      s, row.source, now, s === "preconfirmed" ? now : null, s === "confirmed" || s === "finalized" ? now : null, s === "finalized" ? now : null,
    ];
  });
  const inserted = await insertColumns(client, "logs", LOG_COLUMNS, logValues, "ON CONFLICT DO NOTHING RETURNING id, block_number, log_index, tx_hash, block_hash");
  const ids = new Map<string, number>();
  for (const r of inserted.rows as Array<{ id: number; block_number: number; log_index: number; tx_hash: string; block_hash: string }>)
    ids.set(keyOf(r.block_number, r.log_index, r.tx_hash, r.block_hash), r.id);
  const transfers: unknown[][] = [];
  const authorizations: unknown[][] = [];
  const tally = new Map<string, EventCount>();
  for (const row of rows) {
    const key = keyOf(row.blockNumber, row.logIndex, row.transactionHash, row.blockHash);
    const id = ids.get(key);
    if (id === undefined) {
      counts.duplicates++;
      continue;
    }
    // A log listed twice in one batch is inserted once.
    ids.delete(key);
    const carried = [row.blockNumber, row.blockHash, row.blockTimestamp, row.transactionHash, row.transactionIndex, row.logIndex, row.status];
    const event = row.event;
    if (event.kind === "transfer") transfers.push([id, row.chainId, row.address, event.from, event.to, event.value.toString(), ...carried]);
    else authorizations.push([id, row.chainId, row.address, event.authorizer, event.nonce, event.used ? "used" : "canceled", ...carried]);
    counts.inserted++;
    const name = eventName(event);
    const count = tally.get(`${name}:${row.status}`);
    if (count === undefined) tally.set(`${name}:${row.status}`, { event: name, status: row.status, logs: 1 });
    else count.logs++;
  }
  if (transfers.length > 0) await insertColumns(client, "transfers", TRANSFER_COLUMNS, transfers);
  if (authorizations.length > 0) await insertColumns(client, "authorization_events", AUTHORIZATION_COLUMNS, authorizations);
  counts.byEvent = [...tally.values()];
  return counts;
}

const TRANSACTION_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"], ["chain_id", "bigint"], ["from_address", "text"], ["to_address", "text"], ["selector", "text"], ["input_bytes", "integer"],
  ["attribution", "text"], ["schema_id", "integer"], ["registry_address", "text"], ["registry_chain_id", "text"], ["malformed_reason", "text"],
  ["registry_error", "text"], ["user_operations", "integer"], ["fetched_at", "bigint"],
];
const USER_OPERATION_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"], ["op_index", "integer"], ["sender", "text"], ["aggregator", "text"], ["attribution", "text"], ["schema_id", "integer"],
  ["malformed_reason", "text"], ["registry_error", "text"],
];
const CODE_COLUMNS: readonly Column[] = [
  ["tx_hash", "text"], ["op_index", "integer"], ["position", "integer"], ["code", "text"], ["role", "text"], ["registry", "text"],
  ["registry_chain_id", "text"], ["registry_address", "text"],
];

/** Writes attribution rows as the SQLite attribution writer does; a transaction already stored is skipped. Call inside a transaction. */
export async function insertAttributionRows(client: pg.ClientBase, transactions: readonly AttributedTransaction[], now: number): Promise<number> {
  if (transactions.length === 0) return 0;
  const rows = transactions.map(({ chainId, tx, attribution }) => {
    const own = attribution.attribution;
    const registry = own.kind === "codes" && own.schemaId === 1 ? own.registry : undefined;
    return [
      tx.hash, chainId, tx.from, tx.to, tx.input.length >= 10 ? tx.input.slice(0, 10) : null, (tx.input.length - 2) / 2, own.kind,
      "schemaId" in own ? (own.schemaId ?? null) : null, registry?.address ?? null, registry === undefined ? null : registry.chainId.toString(),
      own.kind === "malformed" ? own.reason : null, registryErrorOf(own), attribution.userOperations?.length ?? 0, now,
    ];
  });
  const inserted = await insertColumns(client, "transactions", TRANSACTION_COLUMNS, rows, "ON CONFLICT (tx_hash) DO NOTHING RETURNING tx_hash");
  const fresh = new Set((inserted.rows as Array<{ tx_hash: Hex }>).map((r) => r.tx_hash));
  const operations: unknown[][] = [];
  const codes: unknown[][] = [];
  const addCodes = (hash: Hex, opIndex: number, a: Attribution) => {
    if (a.kind !== "codes") return;
    a.codes.forEach((code, position) => {
      const registry = registryOfCode(a, code);
      const custom = registry.kind === "custom" ? registry.registry : undefined;
      codes.push([hash, opIndex, position, code.code, code.role, registry.kind, custom?.chainId.toString() ?? null, custom?.address ?? null]);
    });
  };
  for (const { tx, attribution } of transactions) {
    if (!fresh.delete(tx.hash)) continue;
    addCodes(tx.hash, OWN_CALLDATA, attribution.attribution);
    for (const op of attribution.userOperations ?? []) {
      const a = op.attribution;
      operations.push([
        tx.hash, op.userOpIndex, op.sender.toLowerCase(), op.aggregator?.toLowerCase() ?? null, a.kind,
        "schemaId" in a ? (a.schemaId ?? null) : null, a.kind === "malformed" ? a.reason : null, registryErrorOf(a),
      ]);
      addCodes(tx.hash, op.userOpIndex, a);
    }
  }
  if (operations.length > 0) await insertColumns(client, "user_operations", USER_OPERATION_COLUMNS, operations, "ON CONFLICT DO NOTHING");
  if (codes.length > 0) await insertColumns(client, "attribution_codes", CODE_COLUMNS, codes, "ON CONFLICT DO NOTHING");
  return inserted.rowCount ?? 0;
}

function registryErrorOf(attribution: Attribution): string | null {
  return attribution.kind === "codes" && attribution.schemaId === 2 ? (attribution.registryError?.reason ?? null) : null;
}
