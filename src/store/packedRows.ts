import type { LogRow } from "../decode/logRow.js";
import { eventName } from "../decode/paymentEvents.js";

/**
 * Rows flattened into one array of plain values, `PACKED_FIELDS` per row, in the order the insert
 * binds them. This is how a backfill window crosses to the writer thread: a structured clone of
 * objects writes every key of every row and the receiving thread builds every object again (a tenth
 * of its time went to collecting them); a flat array of strings and numbers is cloned in one sweep.
 */
export type PackedRows = { count: number; values: unknown[] };

/**
 * Per row, at these offsets: 0 address, 1–4 topic0–3, 5 data, 6 block number, 7 block hash,
 * 8 block timestamp, 9 tx hash, 10 tx index, 11 log index, 12 tx log position, 13 chain id,
 * 14 status, 15 source, 16 event name, 17–18 from/to (or authorizer/nonce), 19 value (or null).
 */
export const PACKED_FIELDS = 20;

export function packRows(rows: readonly LogRow[]): PackedRows {
  const values = new Array<unknown>(rows.length * PACKED_FIELDS);
  let i = 0;
  for (const row of rows) {
    const { topics, event } = row;
    values[i++] = row.address;
    values[i++] = topics[0] ?? null;
    values[i++] = topics[1] ?? null;
    values[i++] = topics[2] ?? null;
    values[i++] = topics[3] ?? null;
    values[i++] = row.data;
    values[i++] = row.blockNumber;
    values[i++] = row.blockHash;
    values[i++] = row.blockTimestamp;
    values[i++] = row.transactionHash;
    values[i++] = row.transactionIndex;
    values[i++] = row.logIndex;
    values[i++] = row.txLogPosition;
    values[i++] = row.chainId;
    values[i++] = row.status;
    values[i++] = row.source;
    values[i++] = eventName(event);
    if (event.kind === "transfer") {
      values[i++] = event.from;
      values[i++] = event.to;
    } else {
      values[i++] = event.authorizer;
      values[i++] = event.nonce;
    }
    values[i++] = event.kind === "transfer" ? event.value : null;
  }
  return { count: rows.length, values };
}
