import type { LogRow } from "../decode/logRow.js";
import { eventName } from "../decode/paymentEvents.js";

/**
 * Rows as the writer thread takes them: all their strings joined into ONE string, and all their
 * numbers in one Float64Array. A structured clone of row objects wrote every key of every row and
 * the receiving thread built every object again; a flat array of values still cost a clone per
 * string (an eighth of the main thread, and most of the writer thread's garbage). One string is
 * copied in one sweep and split on the other side into slices of it; the numbers' buffer is
 * transferred, not copied.
 *
 * Every string is a validated hex, decimal or enum value (never empty, never holding NUL), so NUL
 * separates them and an empty string stands for NULL.
 */
export type PackedRows = { count: number; text: string; numbers: Float64Array<ArrayBuffer> };

/**
 * Strings per row, at these offsets: 0 address, 1–4 topic0–3, 5 data, 6 block hash, 7 tx hash,
 * 8 status, 9 source, 10 event name, 11–12 from/to (or authorizer/nonce), 13 value (or NULL).
 */
export const STRING_FIELDS = 14;
/** Numbers per row: 0 block number, 1 block timestamp, 2 tx index, 3 log index, 4 tx log position, 5 chain id. */
export const NUMBER_FIELDS = 6;
const SEPARATOR = "\u0000";

export function packRows(rows: readonly LogRow[]): PackedRows {
  const strings = new Array<string>(rows.length * STRING_FIELDS);
  const numbers = new Float64Array(rows.length * NUMBER_FIELDS);
  let s = 0;
  let n = 0;
  for (const row of rows) {
    const { topics, event } = row;
    strings[s++] = row.address;
    strings[s++] = topics[0] ?? "";
    strings[s++] = topics[1] ?? "";
    strings[s++] = topics[2] ?? "";
    strings[s++] = topics[3] ?? "";
    strings[s++] = row.data;
    strings[s++] = row.blockHash;
    strings[s++] = row.transactionHash;
    strings[s++] = row.status;
    strings[s++] = row.source;
    strings[s++] = eventName(event);
    if (event.kind === "transfer") {
      strings[s++] = event.from;
      strings[s++] = event.to;
      strings[s++] = event.value.toString();
    } else {
      strings[s++] = event.authorizer;
      strings[s++] = event.nonce;
      strings[s++] = "";
    }
    numbers[n++] = row.blockNumber;
    numbers[n++] = row.blockTimestamp;
    numbers[n++] = row.transactionIndex;
    numbers[n++] = row.logIndex;
    numbers[n++] = row.txLogPosition;
    numbers[n++] = row.chainId;
  }
  return { count: rows.length, text: strings.join(SEPARATOR), numbers };
}

/** The strings of packed rows, STRING_FIELDS per row ("" for NULL); refuses a text that does not split into that many. */
export function unpackStrings({ count, text }: PackedRows): string[] {
  if (count === 0) return [];
  const strings = text.split(SEPARATOR);
  if (strings.length !== count * STRING_FIELDS) throw new Error(`packed rows hold ${strings.length} strings, expected ${count * STRING_FIELDS}`);
  return strings;
}
