/**
 * A small CBOR reader (RFC 8949) for ERC-8021 schema 2: definite and indefinite lengths, tags,
 * simple values and floats; bounded depth. Every read is bounds-checked: malformed input is a
 * `{ ok: false }` answer, never an exception.
 */

/** `start`/`end` are byte offsets of the whole item (head included) in the CBOR buffer. */
export type CborItem = { start: number; end: number } & (
  | { type: "uint" | "negint" | "simple" | "float" }
  | { type: "bytes"; value: Uint8Array }
  | { type: "text"; value: string }
  | { type: "array"; items: CborItem[] }
  | { type: "map"; entries: Array<[CborItem, CborItem]> }
  | { type: "tag"; item: CborItem }
  /** Nested deeper than the reader's `maxDepth`: checked to be well-formed and skipped, its content not kept. */
  | { type: "deep" }
);

/** One parsed CBOR buffer; `deepStarts` are the start offsets of the items cut off as `deep`. */
export type CborDocument = { item: CborItem; deepStarts: number[] };

/** A head's major type and argument; `argument` is undefined for additional info 31 (indefinite length or break). */
type CborHead = { major: number; info: number; argument: number | undefined };

const BREAK = 0xff;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Reads exactly one item spanning all of `bytes`; rejects anything not well-formed. Items nested
 * deeper than `maxDepth` (the outermost item is depth 1) are skipped without recursion.
 */
export function readCbor(
  bytes: Uint8Array,
  maxDepth: number,
): { ok: true; value: CborDocument } | { ok: false; reason: string } {
  let position = 0;
  const deepStarts: number[] = [];
  const reject = (reason: string): never => {
    throw new CborError(reason);
  };
  const need = (count: number): void => {
    if (count > bytes.length - position) reject("CBOR length beyond the buffer");
  };
  const readUint = (count: number): number => {
    need(count);
    let value = 0;
    // Past 2^53 the value is imprecise, but still larger than any buffer, which is all lengths need.
    for (let i = 0; i < count; i++) value = value * 256 + (bytes[position++] ?? 0);
    return value;
  };
  const readHead = (): CborHead => {
    need(1);
    const head = bytes[position++] ?? 0;
    const major = head >> 5;
    const info = head & 0x1f;
    if (info < 24) return { major, info, argument: info };
    if (info <= 27) return { major, info, argument: readUint(2 ** (info - 24)) };
    if (info === 31) {
      if (major === 0 || major === 1 || major === 6)
        reject(`reserved CBOR additional info ${info}`);
      return { major, info, argument: undefined };
    }
    return reject(`reserved CBOR additional info ${info}`);
  };
  const atBreak = (): boolean => {
    need(1);
    return bytes[position] === BREAK;
  };
  /** A definite string's bytes, or the concatenated chunks of an indefinite one (each a definite string of the same major type). */
  const readStringBytes = (major: number, argument: number | undefined): Uint8Array => {
    if (argument !== undefined) {
      need(argument);
      const raw = bytes.subarray(position, position + argument);
      position += argument;
      if (major === 3) decodeText(raw);
      return raw;
    }
    const chunks: Uint8Array[] = [];
    while (!atBreak()) {
      const chunk = readHead();
      if (chunk.major !== major || chunk.argument === undefined)
        reject("CBOR string chunk is not a definite string of the same type");
      chunks.push(readStringBytes(major, chunk.argument));
    }
    position++;
    return concatBytes(chunks);
  };
  const decodeText = (raw: Uint8Array): string => {
    try {
      return utf8.decode(raw);
    } catch {
      return reject("CBOR text is not UTF-8");
    }
  };
  /** Major type 7: simple values and floats; the break code is never an item. */
  const checkSimple = (head: CborHead): "simple" | "float" => {
    if (head.info < 24) return "simple";
    if (head.info === 24) {
      if ((head.argument ?? 0) < 32) reject("CBOR simple value not well-formed");
      return "simple";
    }
    if (head.info <= 27) return "float";
    return reject("unexpected CBOR break");
  };
  /** Skips one item of any depth without recursion, checking it as strictly as readItem does. */
  const skipItem = (): void => {
    // Open containers, innermost last: items still to read (Infinity until a break), and for an
    // indefinite map, how many were read (a break must close it after a whole number of pairs).
    const open: Array<{ remaining: number; indefiniteMap: boolean; read: number }> = [
      { remaining: 1, indefiniteMap: false, read: 0 },
    ];
    while (open.length > 0) {
      const top = open[open.length - 1];
      if (top === undefined) break;
      if (top.remaining === 0) {
        open.pop();
        continue;
      }
      if (top.remaining === Infinity && atBreak()) {
        if (top.indefiniteMap && top.read % 2 !== 0)
          reject("CBOR map ends between a key and its value");
        position++;
        open.pop();
        continue;
      }
      top.remaining--;
      top.read++;
      const head = readHead();
      switch (head.major) {
        case 2:
        case 3:
          readStringBytes(head.major, head.argument);
          break;
        case 4:
          if (head.argument !== undefined) need(head.argument);
          open.push({ remaining: head.argument ?? Infinity, indefiniteMap: false, read: 0 });
          break;
        case 5:
          if (head.argument !== undefined) need(head.argument * 2);
          open.push({
            remaining: head.argument === undefined ? Infinity : head.argument * 2,
            indefiniteMap: head.argument === undefined,
            read: 0,
          });
          break;
        case 6:
          open.push({ remaining: 1, indefiniteMap: false, read: 0 });
          break;
        case 7:
          checkSimple(head);
          break;
        default:
          break; // Major 0 and 1: the head is the whole item.
      }
    }
  };
  const readItem = (depth: number): CborItem => {
    const start = position;
    if (depth > maxDepth) {
      skipItem();
      deepStarts.push(start);
      return { type: "deep", start, end: position };
    }
    const head = readHead();
    switch (head.major) {
      case 0:
      case 1:
        return { type: head.major === 0 ? "uint" : "negint", start, end: position };
      case 2:
      case 3: {
        const raw = readStringBytes(head.major, head.argument);
        if (head.major === 2) return { type: "bytes", value: raw, start, end: position };
        return { type: "text", value: decodeText(raw), start, end: position };
      }
      case 4: {
        const items: CborItem[] = [];
        if (head.argument === undefined) {
          while (!atBreak()) items.push(readItem(depth + 1));
          position++;
        } else {
          need(head.argument); // every item takes at least one byte
          for (let i = 0; i < head.argument; i++) items.push(readItem(depth + 1));
        }
        return { type: "array", items, start, end: position };
      }
      case 5: {
        const entries: Array<[CborItem, CborItem]> = [];
        if (head.argument === undefined) {
          while (!atBreak()) {
            const key = readItem(depth + 1);
            if (atBreak()) reject("CBOR map ends between a key and its value");
            entries.push([key, readItem(depth + 1)]);
          }
          position++;
        } else {
          need(head.argument * 2);
          for (let i = 0; i < head.argument; i++)
            entries.push([readItem(depth + 1), readItem(depth + 1)]);
        }
        return { type: "map", entries, start, end: position };
      }
      case 6:
        return { type: "tag", item: readItem(depth + 1), start, end: position };
      default:
        return { type: checkSimple(head), start, end: position };
    }
  };
  try {
    const item = readItem(1);
    if (position !== bytes.length)
      return { ok: false, reason: "trailing bytes after the CBOR item" };
    return { ok: true, value: { item, deepStarts } };
  } catch (error) {
    if (error instanceof CborError) return { ok: false, reason: error.message };
    throw error;
  }
}

/** Private control flow of the CBOR reader; never leaves this module. */
class CborError extends Error {}

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
