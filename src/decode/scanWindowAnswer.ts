import type { Hex } from "viem";
import type { BlockRange } from "../blockRanges.js";
import { NUMBER_FIELDS, type PackedRows } from "../rows/packedRows.js";
import { createTxLogPositions } from "./preconfirmedTwins.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
} from "../rows/paymentEvents.js";
import type { DecodedWindow, WindowAnswer } from "./decodedWindow.js";

/**
 * The fast path of decodeWindowAnswer: reads an eth_getLogs answer's bytes once, checks every field
 * and writes the packed rows' text straight from them, with no parsed JSON, no string per field and
 * no row objects (which made a third of the decode thread's time garbage collection).
 *
 * It takes only the plain case: a well-formed answer whose logs all carry a timestamp, fall in the
 * filter, decode as payment events and come in (block, logIndex) order, in the JSON nodes send (no
 * escapes, no unknown keys). Anything else returns undefined and decodeWindowAnswer's full path
 * decides, with its messages: a damaged answer, a node's error, rejected logs, blocks without
 * timestamps. Both store the same rows (test/decode/scanWindowAnswer.test.ts compares them).
 */
export function scanWindowAnswer(
  answer: WindowAnswer,
): Extract<DecodedWindow, { kind: "rows" }> | undefined {
  // The scan checks addresses and topic0 only: a filter on later topics takes the full path.
  if (
    typeof answer.body === "string" ||
    answer.filter.topic1 !== undefined ||
    answer.filter.topic2 !== undefined
  )
    return undefined;
  try {
    return new Scanner(answer.body, answer, answer.filter).answer();
  } catch (error) {
    if (error === GIVE_UP) return undefined;
    throw error;
  }
}

/**
 * Thrown (and caught above) wherever the answer leaves the plain case: one Error made once, so a
 * throw captures no stack trace on the hot path.
 */
const GIVE_UP = new Error("not the plain case");
function giveUp(): never {
  throw GIVE_UP;
}

const QUOTE = 0x22;
const ZERO = 0x30;
const X = 0x78;
/** Each byte's value as a hex digit (either case), 255 for a byte that is not one. */
const HEX_VALUE = new Uint8Array(256).fill(255);
for (let i = 0; i < 16; i++) {
  HEX_VALUE["0123456789abcdef".charCodeAt(i)] = i;
  HEX_VALUE["0123456789ABCDEF".charCodeAt(i)] = i;
}
/** Each byte's class for hex(): DIGIT (0-9, a-f), UPPER (A-F) or NOT_HEX, bits to OR over a field. */
const DIGIT = 1;
const UPPER = 2;
const NOT_HEX = 4;
const HEX_CLASS = new Uint8Array(256).fill(NOT_HEX);
for (let i = 0; i < 16; i++) {
  HEX_CLASS["0123456789abcdef".charCodeAt(i)] = DIGIT;
  if (i >= 10) HEX_CLASS["ABCDEF".charCodeAt(i - 10)] = UPPER;
}

/** The keys of a log object (a bit each in log()'s `seen`); `removed` may be missing. */
const LOG_KEYS = [
  "address",
  "topics",
  "data",
  "blockNumber",
  "blockHash",
  "blockTimestamp",
  "transactionHash",
  "transactionIndex",
  "logIndex",
  "removed",
] as const;
const LOG_KEY_BYTES = LOG_KEYS.map((name) => Uint8Array.from(Buffer.from(name)));
const ALL_KEYS = (1 << LOG_KEYS.length) - 1;
const REMOVED_BIT = 1 << LOG_KEYS.indexOf("removed");
/** Span slots (start and end of a field's hex digits, after `0x`) of a log's hex fields. */
const ADDRESS = 0;
const TOPIC = 1; // 1 to 4
const DATA = 5;
const BLOCK_HASH = 6;
const TX_HASH = 7;
const SLOTS = 8;

const EVENTS: ReadonlyArray<{ topic: Hex; name: string }> = [
  { topic: TRANSFER_TOPIC, name: "transfer" },
  { topic: AUTHORIZATION_USED_TOPIC, name: "authorization_used" },
  { topic: AUTHORIZATION_CANCELED_TOPIC, name: "authorization_canceled" },
];
/** Longest text a log adds beyond the hex it copies from the answer: status, source, event name, two derived fields, a value, separators. */
const EXTRA_TEXT_PER_LOG = 256;
/** Fewer bytes than one log object of the plain case can take in an answer (its keys and three topics alone take more). */
const SMALLEST_LOG_JSON = 360;

/**
 * The answer is copied to the start of this buffer and the packed text written after it, then
 * copied out at its length: one buffer for every window (a scan is synchronous). Both in one buffer,
 * a field is copied into the text by copyWithin (a native copy, no view allocated): about 17 ns for
 * 64 digits against 140 byte by byte.
 */
let scratch = new Uint8Array(0);
/** A larger text (a rare, outsized answer) gets a buffer of its own, so the scratch never holds on to it. */
const SCRATCH_KEPT_BYTES = 8 * 1024 * 1024;

/** Scratch for putDecimal: a uint256 as 16-bit limbs, most significant first, and its base-10^9 digits. */
const LIMBS = new Float64Array(16);
const CHUNKS = new Float64Array(9);
const POWERS_OF_TEN = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/** The hex digits of a `0x` value (the filter's are lower case: an answer's are compared in lower case), as bytes. */
const digitsOf = (hex: string): Uint8Array => Uint8Array.from(Buffer.from(hex.slice(2), "latin1"));

class Scanner {
  private at = 0;
  private w = 0;
  /** The answer's bytes (a view of exactly its length: a read past its end is undefined). */
  private readonly body: Uint8Array;
  /** The packed text, in the same buffer as the answer, from `outStart` on. */
  private readonly out: Uint8Array;
  private readonly buffer: Uint8Array;
  private readonly outStart: number;
  /** Start and end of each hex field of the log being read (SLOTS pairs), and whether it held upper case. */
  private readonly spans = new Int32Array(SLOTS * 2);
  private readonly upper = new Uint8Array(SLOTS);
  private topics = 0;
  private readonly numbers: number[] = [];
  private readonly txHashes: Hex[] = [];
  private readonly blocks: Array<[number, Hex]> = [];
  /** The filter's addresses, as lower-case hex digits. */
  private readonly addresses: Uint8Array[];
  /** EVENTS' entries the filter asks for. */
  private readonly events: Array<{ name: string; topic: Uint8Array }>;
  /**
   * Positions per transaction and token (preconfirmedTwins.ts): a run is keyed by the transaction's
   * hash (the string kept for txHashes) and, past the filter's first address, the address's index in
   * it, so a run makes no string of its own.
   */
  private readonly positions = createTxLogPositions();
  /** The filter address (its index in `addresses`) of the log being read, and of the previous one. */
  private address = -1;
  private previousAddress = -1;
  private previousBlock = -1;
  private previousLogIndex = -1;
  /** The previous log's spans: same block, same hash; same transaction and token, next position. */
  private readonly previous = new Int32Array(SLOTS * 2);

  constructor(
    answer: Uint8Array,
    private readonly context: WindowAnswer,
    private readonly range: BlockRange,
  ) {
    this.addresses = context.filter.addresses.map(digitsOf);
    this.events = EVENTS.filter((e) => context.filter.topic0.includes(e.topic)).map((e) => ({
      name: e.name,
      topic: digitsOf(e.topic),
    }));
    const textSize =
      answer.length + (Math.floor(answer.length / SMALLEST_LOG_JSON) + 1) * EXTRA_TEXT_PER_LOG;
    const size = answer.length + textSize;
    if (size > SCRATCH_KEPT_BYTES) this.buffer = new Uint8Array(size);
    else {
      if (scratch.length < size) scratch = new Uint8Array(size);
      this.buffer = scratch;
    }
    this.buffer.set(answer);
    this.body = this.buffer.subarray(0, answer.length);
    this.outStart = answer.length;
    this.out = this.buffer.subarray(this.outStart, size);
  }

  /** `{"jsonrpc": …, "id": <our id>, "result": [logs…]}`, keys in any order, nothing else. */
  answer(): Extract<DecodedWindow, { kind: "rows" }> {
    let sawId = false;
    let sawResult = false;
    this.expect(0x7b);
    do {
      const [start, end] = this.string();
      this.expect(0x3a);
      const key = latin1(this.body, start, end);
      if (key === "jsonrpc") this.string();
      else if (key === "id" && !sawId) {
        sawId = true;
        this.space();
        const first = this.at;
        while (this.body[this.at]! >= ZERO && this.body[this.at]! <= 0x39) this.at++;
        if (
          this.at === first ||
          this.at - first > 15 ||
          Number(latin1(this.body, first, this.at)) !== this.context.id
        )
          giveUp();
      } else if (key === "result" && !sawResult) {
        sawResult = true;
        this.expect(0x5b);
        this.space();
        if (this.body[this.at] === 0x5d) this.at++;
        else
          do this.log();
          while (this.more(0x5d));
      } else giveUp();
    } while (this.more(0x7d));
    this.space();
    if (this.at !== this.body.length || !sawId || !sawResult) giveUp();
    // Every string is followed by a separator: the text is all but the last one, in a buffer of its own (it moves to the writer's thread).
    const rows: PackedRows = {
      count: this.numbers.length / NUMBER_FIELDS,
      text: this.out.slice(0, Math.max(0, this.w - 1)),
      numbers: new Float64Array(this.numbers),
    };
    return {
      kind: "rows",
      rows,
      txHashes: this.txHashes,
      blocks: this.blocks,
      untimed: [],
      rejected: [],
    };
  }

  /** One log object: checked as rpcLog.ts, getLogs.ts and paymentEvents.ts check it, then packed. */
  private log(): void {
    let seen = 0;
    let blockNumber = -1;
    let timestamp = -1;
    let txIndex = -1;
    let logIndex = -1;
    this.topics = 0;
    this.expect(0x7b);
    do {
      const key = this.key();
      if ((seen & (1 << key)) !== 0) giveUp();
      seen |= 1 << key;
      // key() answers an index into LOG_KEYS or gives up.
      switch (LOG_KEYS[key]!) {
        case "address":
          this.hex(ADDRESS, 40);
          break;
        case "topics":
          this.topicList();
          break;
        case "data":
          this.hex(DATA, -1);
          break;
        case "blockNumber":
          blockNumber = this.quantity();
          break;
        case "blockHash":
          this.hex(BLOCK_HASH, 64);
          break;
        case "blockTimestamp":
          timestamp = this.quantity();
          break;
        case "transactionHash":
          this.hex(TX_HASH, 64);
          break;
        case "transactionIndex":
          txIndex = this.quantity();
          break;
        case "logIndex":
          logIndex = this.quantity();
          break;
        case "removed":
          this.removedFalse();
      }
    } while (this.more(0x7d));
    if ((seen | REMOVED_BIT) !== ALL_KEYS) giveUp();

    // In the filter, one hash per block and not the pre-confirmed zero hash, in strict (block, logIndex)
    // order (so no two logs at one position): else the full path says what is wrong.
    if (blockNumber < this.range.from || blockNumber > this.range.to || this.topics !== 3) giveUp();
    this.address = this.addressIndex();
    if (this.address === -1) giveUp();
    const event = this.eventName();
    const sameBlock = blockNumber === this.previousBlock;
    if (blockNumber < this.previousBlock || (sameBlock && logIndex <= this.previousLogIndex))
      giveUp();
    if (sameBlock ? !this.sameAsPrevious(BLOCK_HASH) : this.allZero(BLOCK_HASH)) giveUp();
    if (!sameBlock) this.blocks.push([blockNumber, this.text(BLOCK_HASH) as Hex]);
    this.previousBlock = blockNumber;
    this.previousLogIndex = logIndex;

    // The event (paymentEvents.ts): address words with zero padding, 32 bytes of data for a transfer, none for an authorization.
    const transfer = event === "transfer";
    const s = this.spans;
    if (s[DATA * 2 + 1]! - s[DATA * 2]! !== (transfer ? 64 : 0)) giveUp();
    if (!this.zeroPadded(TOPIC + 1) || (transfer && !this.zeroPadded(TOPIC + 2))) giveUp();

    // Position among the transaction's logs of this token, in arrival order (preconfirmedTwins.ts): a
    // string only where the transaction or the token changes.
    const first = this.txHashes.length === 0;
    const sameTx = !first && this.sameAsPrevious(TX_HASH);
    const tx = sameTx ? this.txHashes.at(-1)! : (this.text(TX_HASH) as Hex);
    if (first || !sameTx || this.address !== this.previousAddress)
      this.positions.startRun(this.runKey(tx, this.address));
    this.txHashes.push(tx);
    this.previousAddress = this.address;
    this.previous.set(s);

    // The packed strings (packedRows.ts): address, topics 0–3, data, hashes, status, source, event, two fields, value.
    this.put(ADDRESS, 0);
    this.put(TOPIC, 0);
    this.put(TOPIC + 1, 0);
    this.put(TOPIC + 2, 0);
    this.out[this.w++] = 0;
    this.put(DATA, 0);
    this.put(BLOCK_HASH, 0);
    this.put(TX_HASH, 0);
    this.putText(blockNumber <= this.context.finalized ? "finalized" : "confirmed");
    this.putText("backfill");
    this.putText(event);
    this.put(TOPIC + 1, 24);
    if (transfer) {
      this.put(TOPIC + 2, 24);
      this.putDecimal(s[DATA * 2]!);
    } else {
      this.put(TOPIC + 2, 0);
      this.out[this.w++] = 0;
    }
    this.numbers.push(
      blockNumber,
      timestamp,
      txIndex,
      logIndex,
      this.positions.take(),
      this.context.chainId,
    );
    // A typed array drops writes past its end: never expected (see the sizes above), but a text cut short must not pass.
    if (this.w > this.out.length) giveUp();
  }

  private space(): void {
    const body = this.body;
    let at = this.at;
    for (let c = body[at]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = body[++at]);
    this.at = at;
  }

  private expect(byte: number): void {
    this.space();
    if (this.body[this.at] !== byte) giveUp();
    this.at++;
  }

  /** `,` (true) or the closing byte (false). */
  private more(close: number): boolean {
    this.space();
    const c = this.body[this.at++];
    if (c === 0x2c) return true;
    if (c !== close) giveUp();
    return false;
  }

  /** A string of printable ASCII without escapes: its bytes' start and end. */
  private string(): [number, number] {
    this.expect(QUOTE);
    const body = this.body;
    const start = this.at;
    let at = start;
    for (let c = body[at]; c !== QUOTE; c = body[++at])
      if (c === undefined || c === 0x5c || c < 0x20 || c > 0x7e) giveUp();
    this.at = at + 1;
    return [start, at];
  }

  /** A log object's key and its colon, as the key's index in LOG_KEYS (compared as bytes: no string per key). */
  private key(): number {
    this.expect(QUOTE);
    const body = this.body;
    const start = this.at;
    const end = body.indexOf(QUOTE, start);
    if (end === -1) giveUp();
    const length = end - start;
    // The lengths tell the keys apart, but for `address` and `removed` (7): their first byte does.
    let index = -1;
    for (let k = 0; k < LOG_KEY_BYTES.length; k++)
      if (LOG_KEY_BYTES[k]!.length === length && LOG_KEY_BYTES[k]![0] === body[start]) index = k;
    if (index === -1) giveUp();
    const bytes = LOG_KEY_BYTES[index]!;
    for (let i = 1; i < length; i++) if (bytes[i] !== body[start + i]) giveUp();
    this.at = end + 1;
    this.expect(0x3a);
    return index;
  }

  /** `"0x…"`: exactly `digits` hex digits, or any even count when -1 (rpcLog.ts's patterns). */
  private hex(slot: number, digits: number): void {
    this.expect(QUOTE);
    const body = this.body;
    if (body[this.at] !== ZERO || body[this.at + 1] !== X) giveUp();
    const start = this.at + 2;
    let at = start;
    let classes = 0;
    if (digits !== -1) {
      // A fixed length: the closing quote where it must be, then every digit's class (a quote before it is NOT_HEX).
      at = start + digits;
      if (body[at] !== QUOTE) giveUp();
      for (let i = start; i < at; i++) classes |= HEX_CLASS[body[i]!]!;
    } else {
      for (let c = body[at]; c !== QUOTE; c = body[++at]) {
        if (c === undefined) giveUp();
        classes |= HEX_CLASS[c]!;
      }
      if ((at - start) % 2 !== 0) giveUp();
    }
    if ((classes & NOT_HEX) !== 0) giveUp();
    this.spans[slot * 2] = start;
    this.spans[slot * 2 + 1] = at;
    this.upper[slot] = classes & UPPER;
    this.at = at + 1;
  }

  /** `"0x…"` with 1 to 13 hex digits: a number JS holds exactly (rpcLog.ts). */
  private quantity(): number {
    this.expect(QUOTE);
    const body = this.body;
    if (body[this.at] !== ZERO || body[this.at + 1] !== X) giveUp();
    let at = this.at + 2;
    const start = at;
    let value = 0;
    for (let c = body[at]; c !== QUOTE; c = body[++at]) {
      const digit = c === undefined ? 255 : HEX_VALUE[c]!;
      if (digit === 255) giveUp();
      value = value * 16 + digit;
    }
    if (at === start || at - start > 13) giveUp();
    this.at = at + 1;
    return value;
  }

  private topicList(): void {
    this.expect(0x5b);
    this.space();
    if (this.body[this.at] === 0x5d) {
      this.at++;
      return;
    }
    do {
      if (this.topics === 4) giveUp();
      this.hex(TOPIC + this.topics++, 64);
    } while (this.more(0x5d));
  }

  /** `removed` may only be false here: true (or null, or anything else) goes to the full path. */
  private removedFalse(): void {
    this.space();
    const body = this.body;
    const at = this.at;
    if (
      body[at] !== 0x66 ||
      body[at + 1] !== 0x61 ||
      body[at + 2] !== 0x6c ||
      body[at + 3] !== 0x73 ||
      body[at + 4] !== 0x65
    )
      giveUp();
    this.at = at + 5;
  }

  /** The log's address as an index in the filter's addresses, -1 when it is not one of them. */
  private addressIndex(): number {
    for (let i = 0; i < this.addresses.length; i++)
      if (this.equals(ADDRESS, this.addresses[i]!)) return i;
    return -1;
  }

  /** The event of topic0, when the filter asks for it. */
  private eventName(): string {
    for (const event of this.events) if (this.equals(TOPIC, event.topic)) return event.name;
    return giveUp();
  }

  /** Whether a field's digits are `digits` (lower case), whatever their case. */
  private equals(slot: number, digits: Uint8Array): boolean {
    const start = this.spans[slot * 2]!;
    if (this.spans[slot * 2 + 1]! - start !== digits.length) return false;
    for (let i = 0; i < digits.length; i++)
      if ((this.body[start + i]! | 0x20) !== digits[i]) return false;
    return true;
  }

  /** Whether a field holds the same digits as in the previous log, whatever their case. */
  private sameAsPrevious(slot: number): boolean {
    const start = this.spans[slot * 2]!;
    const before = this.previous[slot * 2]!;
    const length = this.spans[slot * 2 + 1]! - start;
    if (this.previous[slot * 2 + 1]! - before !== length) return false;
    for (let i = 0; i < length; i++)
      if ((this.body[start + i]! | 0x20) !== (this.body[before + i]! | 0x20)) return false;
    return true;
  }

  /** The key of a run of positions: the transaction's hash, with the address's index past the first address. */
  private runKey(tx: Hex, address: number): string {
    return address === 0 ? tx : `${tx}:${address}`;
  }

  /** The 64 hex digits at `start` as a decimal (uint256), as the text's next string. */
  private putDecimal(start: number): void {
    const limbs = LIMBS;
    for (let i = 0; i < 16; i++) {
      let limb = 0;
      for (let j = 0; j < 4; j++) limb = limb * 16 + HEX_VALUE[this.body[start + i * 4 + j]!]!;
      limbs[i] = limb;
    }
    // Base 10^9 digits by long division of 16-bit limbs (exact in doubles), least significant first.
    let chunks = 0;
    let top = 0;
    while (top < 16 && limbs[top] === 0) top++;
    do {
      let remainder = 0;
      for (let i = top; i < 16; i++) {
        const current = remainder * 65_536 + limbs[i]!;
        limbs[i] = Math.floor(current / 1e9);
        remainder = current - limbs[i]! * 1e9;
      }
      CHUNKS[chunks++] = remainder;
      while (top < 16 && limbs[top] === 0) top++;
    } while (top < 16);
    const out = this.out;
    let w = this.w;
    for (let c = chunks - 1; c >= 0; c--) {
      const chunk = CHUNKS[c]!;
      // The most significant chunk without leading zeros, the others with all nine digits.
      let digits = 9;
      if (c === chunks - 1)
        for (digits = 1; digits < 9 && chunk >= POWERS_OF_TEN[digits]!; digits++);
      let rest = chunk;
      for (let d = digits - 1; d >= 0; d--) {
        out[w + d] = ZERO + (rest % 10);
        rest = Math.floor(rest / 10);
      }
      w += digits;
    }
    out[w++] = 0;
    this.w = w;
  }

  /** Whether a field's digits are all zero (a block hash: the pre-confirmed view's). */
  private allZero(slot: number): boolean {
    const start = this.spans[slot * 2]!;
    for (let i = start; i < this.spans[slot * 2 + 1]!; i++) if (this.body[i] !== ZERO) return false;
    return true;
  }

  private zeroPadded(slot: number): boolean {
    const start = this.spans[slot * 2]!;
    for (let i = start; i < start + 24; i++) if (this.body[i] !== ZERO) return false;
    return true;
  }

  /** A hex field as lower-case `0x…` text: a transaction's hash, once per transaction (txHashes). */
  private text(slot: number): string {
    const text = `0x${latin1(this.body, this.spans[slot * 2]!, this.spans[slot * 2 + 1]!)}`;
    return this.upper[slot] === 0 ? text : text.toLowerCase();
  }

  /** A hex field, less its first `skip` digits, in lower case as the text's next string. */
  private put(slot: number, skip: number): void {
    const out = this.out;
    const end = this.spans[slot * 2 + 1]!;
    let w = this.w;
    out[w++] = ZERO;
    out[w++] = X;
    const start = this.spans[slot * 2]! + skip;
    if (this.upper[slot] === 0) {
      // Past the buffer's end copyWithin copies less, and log() then refuses the text (its length check).
      this.buffer.copyWithin(this.outStart + w, start, end);
      w += end - start;
    } else {
      const body = this.body;
      for (let i = start; i < end; i++)
        out[w++] = body[i]! | (body[i]! >= 0x41 && body[i]! <= 0x46 ? 0x20 : 0);
    }
    out[w++] = 0;
    this.w = w;
  }

  private putText(text: string): void {
    for (let i = 0; i < text.length; i++) this.out[this.w++] = text.charCodeAt(i);
    this.out[this.w++] = 0;
  }
}

function latin1(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString("latin1");
}
