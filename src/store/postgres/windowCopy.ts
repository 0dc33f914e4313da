import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { LogRow } from "../../decode/logRow.js";
import { eventName } from "../../decode/paymentEvents.js";
import { createEventTally, type InsertCounts } from "../logWriter.js";

const LOG_COLUMNS =
  "id, chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, " +
  "tx_log_position, status, source, first_seen_at, preconfirmed_at, confirmed_at, finalized_at";
const DECODED_TAIL = "block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status";
const TRANSFER_COLUMNS = `log_id, chain_id, token, from_address, to_address, value, ${DECODED_TAIL}`;
const AUTHORIZATION_COLUMNS = `log_id, chain_id, token, authorizer, nonce, kind, ${DECODED_TAIL}`;
const UNIQUE_VIOLATION = "23505";

/**
 * Stores a window with COPY (bulk inserts, about 40% less server CPU than the INSERT … SELECT of
 * column arrays): log ids are reserved from the table's sequence first, so the decoded rows can
 * name their log. COPY has no ON CONFLICT: when a log of the window is already stored (or listed
 * twice), the COPY is rolled back to its savepoint and undefined is returned, and the caller
 * stores the window with the statement that skips duplicates. Call inside a transaction.
 */
export async function copyWindow(client: pg.ClientBase, rows: readonly LogRow[], now: number): Promise<InsertCounts | undefined> {
  if (rows.length === 0) return { inserted: 0, duplicates: 0, byEvent: [] };
  await client.query("SAVEPOINT window_copy");
  try {
    const reserved = await client.query({
      text: "SELECT nextval(pg_get_serial_sequence('logs', 'id'))::text AS id FROM generate_series(1, $1)",
      values: [rows.length],
      rowMode: "array",
    });
    const ids = (reserved.rows as string[][]).map((r) => r[0]!);
    await copyInto(client, `COPY logs (${LOG_COLUMNS}) FROM STDIN`, (out) => {
      for (let i = 0; i < rows.length; i++) encodeLog(out, ids[i]!, rows[i]!, now);
    });
    if (rows.some((row) => row.event.kind === "transfer"))
      await copyInto(client, `COPY transfers (${TRANSFER_COLUMNS}) FROM STDIN`, (out) => {
        for (let i = 0; i < rows.length; i++) if (rows[i]!.event.kind === "transfer") encodeDecoded(out, ids[i]!, rows[i]!);
      });
    if (rows.some((row) => row.event.kind === "authorization"))
      await copyInto(client, `COPY authorization_events (${AUTHORIZATION_COLUMNS}) FROM STDIN`, (out) => {
        for (let i = 0; i < rows.length; i++) if (rows[i]!.event.kind === "authorization") encodeDecoded(out, ids[i]!, rows[i]!);
      });
    await client.query("RELEASE SAVEPOINT window_copy");
    const tally = createEventTally();
    for (const row of rows) tally.add(eventName(row.event), row.status);
    return { inserted: rows.length, duplicates: 0, byEvent: tally.counts() };
  } catch (error) {
    if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error;
    await client.query("ROLLBACK TO SAVEPOINT window_copy");
    return undefined;
  }
}

/**
 * One log as a line of COPY text. Every value is a validated hex string, a number, a decimal
 * string or one of our own words: none holds a tab, newline or backslash, so none is escaped.
 */
function encodeLog(out: CopyText, id: string, row: LogRow, now: number): void {
  const s = row.status;
  const [topic0, topic1, topic2, topic3] = row.topics;
  out.field(id).field(String(row.chainId)).field(row.address).nullable(topic0).nullable(topic1).nullable(topic2).nullable(topic3).field(row.data);
  out.field(String(row.blockNumber)).field(row.blockHash).field(String(row.blockTimestamp)).field(row.transactionHash);
  out.field(String(row.transactionIndex)).field(String(row.logIndex)).field(String(row.txLogPosition)).field(s).field(row.source);
  const at = String(now);
  out.field(at).nullable(s === "preconfirmed" ? at : undefined).nullable(s === "confirmed" || s === "finalized" ? at : undefined);
  out.nullable(s === "finalized" ? at : undefined).endLine();
}

/** A transfer or authorization event row of the log `id`. */
function encodeDecoded(out: CopyText, id: string, row: LogRow): void {
  const event = row.event;
  out.field(id).field(String(row.chainId)).field(row.address);
  if (event.kind === "transfer") out.field(event.from).field(event.to).field(event.value);
  else out.field(event.authorizer).field(event.nonce).field(event.used ? "used" : "canceled");
  out.field(String(row.blockNumber)).field(row.blockHash).field(String(row.blockTimestamp)).field(row.transactionHash);
  out.field(String(row.transactionIndex)).field(String(row.logIndex)).field(row.status).endLine();
}

/**
 * COPY text written straight into buffers of ASCII, never into joined strings: a window's text is
 * megabytes, and built as strings it became most of the client's garbage collection.
 */
class CopyText {
  static readonly CHUNK_BYTES = 256 * 1024;
  readonly chunks: Buffer[] = [];
  private buffer = Buffer.allocUnsafe(CopyText.CHUNK_BYTES);
  private at = 0;
  private first = true;

  field(value: string): this {
    this.reserve(value.length + 1);
    if (!this.first) this.buffer[this.at++] = 0x09;
    this.first = false;
    this.at += this.buffer.write(value, this.at, "latin1");
    return this;
  }

  /** `\N` (COPY's NULL) for undefined. */
  nullable(value: string | undefined): this {
    return this.field(value ?? "\\N");
  }

  endLine(): void {
    this.reserve(1);
    this.buffer[this.at++] = 0x0a;
    this.first = true;
  }

  finish(): Buffer[] {
    if (this.at > 0) this.chunks.push(this.buffer.subarray(0, this.at));
    this.at = 0;
    return this.chunks;
  }

  private reserve(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    if (this.at > 0) this.chunks.push(this.buffer.subarray(0, this.at));
    this.buffer = Buffer.allocUnsafe(Math.max(CopyText.CHUNK_BYTES, bytes));
    this.at = 0;
  }
}

async function copyInto(client: pg.ClientBase, sql: string, write: (out: CopyText) => void): Promise<void> {
  const out = new CopyText();
  write(out);
  await pipeline(Readable.from(out.finish()), client.query(copyFrom(sql)));
}
