import type { LogRow } from "./logRow.js";
import { eventName } from "./paymentEvents.js";

/**
 * Rows as the writer thread takes them: all their strings joined into ONE text, and all their
 * numbers in one Float64Array. A structured clone of row objects wrote every key of every row and
 * the receiving thread built every object again; a flat array of values still cost a clone per
 * string (an eighth of the main thread, and most of the writer thread's garbage). The text is
 * split on the other side into slices of it. Rows decoded on the decode thread carry it as ASCII
 * bytes (packRowsToMove), so both buffers are transferred, never copied; rows packed on the main
 * thread (live writes, a short backfill) carry a string, copied in one sweep.
 *
 * Every string is a validated hex, decimal or enum value (never empty, never holding NUL), so NUL
 * separates them and an empty string stands for NULL.
 */
export type PackedRows = {
  count: number;
  /** The joined strings, or the same text as ASCII bytes (packRowsToMove). */
  text: string | Uint8Array<ArrayBuffer>;
  numbers: Float64Array<ArrayBuffer>;
};

/**
 * Strings per row, at these offsets: 0 address, 1–4 topic0–3, 5 data, 6 block hash, 7 tx hash,
 * 8 status, 9 source, 10 event name, 11–12 from/to (or authorizer/nonce), 13 value (or NULL).
 */
export const STRING_FIELDS = 14;
/** Numbers per row: 0 block number, 1 block timestamp, 2 tx index, 3 log index, 4 tx log position, 5 chain id. */
export const NUMBER_FIELDS = 6;
/** The same offsets by name, for code off the SQLite hot path (which writes them as literals). */
export const STRING_AT = {
  address: 0,
  topic0: 1,
  topic1: 2,
  topic2: 3,
  topic3: 4,
  data: 5,
  blockHash: 6,
  txHash: 7,
  status: 8,
  source: 9,
  event: 10,
  /** `from` of a transfer, `authorizer` of an authorization event. */
  first: 11,
  /** `to` of a transfer, `nonce` of an authorization event. */
  second: 12,
  value: 13,
} as const;
export const NUMBER_AT = {
  blockNumber: 0,
  blockTimestamp: 1,
  txIndex: 2,
  logIndex: 3,
  txLogPosition: 4,
  chainId: 5,
} as const;
const SEPARATOR = "\u0000";

export function packRows(rows: readonly LogRow[]): PackedRows & { text: string } {
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

/**
 * Packed rows whose text is ASCII bytes in a buffer of their own: a backfill window decoded on the
 * decode thread moves to the main thread and on to the writer's thread by transfer (transferList),
 * so the main thread never copies, holds or collects its megabytes of text.
 */
export function packRowsToMove(rows: readonly LogRow[]): PackedRows {
  const packed = packRows(rows);
  const bytes = new Uint8Array(new ArrayBuffer(packed.text.length));
  Buffer.from(bytes.buffer).write(packed.text, "latin1");
  return { ...packed, text: bytes };
}

/** The buffers to list in postMessage's transferList when sending packed rows to another thread (they are unusable here after). */
export const buffersToMove = (packed: PackedRows): ArrayBuffer[] =>
  typeof packed.text === "string"
    ? [packed.numbers.buffer]
    : [packed.numbers.buffer, packed.text.buffer];

/** The strings of packed rows, STRING_FIELDS per row ("" for NULL); refuses a text that does not split into that many. */
export function unpackStrings({ count, text }: PackedRows): string[] {
  if (count === 0) return [];
  const joined =
    typeof text === "string"
      ? text
      : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("latin1");
  const strings = joined.split(SEPARATOR);
  if (strings.length !== count * STRING_FIELDS)
    throw new Error(
      `packed rows hold ${strings.length} strings, expected ${count * STRING_FIELDS}`,
    );
  return strings;
}
