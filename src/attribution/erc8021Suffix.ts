// ox's Hex module, not viem's index: the daemon's start must not load viem (test/cli/startupImports.test.ts).
import { fromBytes, fromNumber, fromString } from "ox/Hex";
import type { Hex } from "viem";
import { ERC8021_MARKER } from "../decode/erc8021.js";

/**
 * ERC-8021 suffix encoders (the ERC-8021 draft: ethereum/ERCs PR 1209, `ERCS/erc-8021.md`), the
 * writing side of src/decode/erc8021.ts: the devnet's demo traffic attributes its payments with
 * them and the x402 facilitator appends the builder-code extension's suffix to the transactions it
 * settles. Each refuses a code the decoder would refuse, since one bad code makes the whole suffix
 * malformed and loses every code in it.
 */

const MARKER_HEX = ERC8021_MARKER.slice(2);
/** Schema 0 stores the codes' length in one byte. */
const MAX_SCHEMA0_CODES_BYTES = 255;
/** Schema 2 stores the CBOR's length in two bytes. */
const MAX_SCHEMA2_CBOR_BYTES = 0xffff;
/** This encoder writes CBOR text and array heads of at most one length byte. */
const MAX_CBOR_SHORT_LENGTH = 255;

/** Schema 0 suffix: `codes ‖ codesLength ‖ 0x00 ‖ marker`, codes comma-separated ASCII. */
export function schema0Suffix(codes: readonly string[]): Hex {
  if (codes.length === 0) throw new Error("schema 0 needs at least one code");
  for (const code of codes) assertCode(code);
  const text = codes.join(",");
  if (text.length > MAX_SCHEMA0_CODES_BYTES)
    throw new Error(`schema 0 codes exceed ${MAX_SCHEMA0_CODES_BYTES} bytes`);
  return `${fromString(text)}${fromNumber(text.length, { size: 1 }).slice(2)}00${MARKER_HEX}`;
}

/** The codes of a schema 2 suffix; each is optional, `services` is written as a CBOR array. */
export type Schema2Codes = {
  app?: string | undefined;
  wallet?: string | undefined;
  services?: readonly string[] | undefined;
};

/**
 * Schema 2 suffix: `cbor ‖ cborLength (2) ‖ 0x02 ‖ marker`, a CBOR map of `a` (app), `w` (wallet)
 * and `s` (services, always an array, even of one: the decoder reads `s` only as an array).
 * An absent or empty `services` writes no `s`.
 */
export function schema2Suffix(codes: Schema2Codes): Hex {
  const entries: Uint8Array[] = [];
  if (codes.app !== undefined) entries.push(cborText("a"), cborText(assertCode(codes.app)));
  if (codes.wallet !== undefined) entries.push(cborText("w"), cborText(assertCode(codes.wallet)));
  if (codes.services !== undefined && codes.services.length > 0) {
    entries.push(
      cborText("s"),
      cborArray(codes.services.map((code) => cborText(assertCode(code)))),
    );
  }
  const map = concat([Uint8Array.of(0xa0 + entries.length / 2), ...entries]);
  if (map.length > MAX_SCHEMA2_CBOR_BYTES)
    throw new Error(`schema 2 CBOR exceeds ${MAX_SCHEMA2_CBOR_BYTES} bytes`);
  return `${fromBytes(map)}${fromNumber(map.length, { size: 2 }).slice(2)}02${MARKER_HEX}`;
}

/** A code as the decoder accepts it: 1+ characters of printable ASCII (0x20..0x7E), no comma. */
function assertCode(code: string): string {
  if (code === "") throw new Error("an attribution code cannot be empty");
  for (let i = 0; i < code.length; i++) {
    const char = code.charCodeAt(i);
    if (char < 0x20 || char > 0x7e || char === 0x2c)
      throw new Error(
        `attribution code ${JSON.stringify(code)} holds a character outside printable ASCII or a comma`,
      );
  }
  return code;
}

/** A CBOR text string (major type 3) of at most 255 bytes. */
function cborText(text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  return concat([cborHead(0x60, bytes.length), bytes]);
}

/** A CBOR array (major type 4) of already-encoded items, at most 255 of them. */
function cborArray(items: readonly Uint8Array[]): Uint8Array {
  return concat([cborHead(0x80, items.length), ...items]);
}

/** The head of a CBOR item of `majorBits` (the major type shifted left by 5) and a length under 256. */
function cborHead(majorBits: number, length: number): Uint8Array {
  if (length > MAX_CBOR_SHORT_LENGTH)
    throw new Error(`CBOR length ${length} too long for this encoder`);
  return length < 24 ? Uint8Array.of(majorBits + length) : Uint8Array.of(majorBits + 24, length);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
