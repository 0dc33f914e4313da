import { bytesToHex, stringToHex, toHex, type Hex } from "viem";

/** The ERC-8021 marker that ends an attributed calldata (protocol-notes §3). */
export const ERC8021_MARKER = "80218021802180218021802180218021";

/** Schema 0 suffix: `codes ‖ codesLength ‖ 0x00 ‖ marker`, codes comma-separated ASCII. */
export function schema0Suffix(codes: readonly string[]): Hex {
  const text = codes.join(",");
  if (text.length > 255) throw new Error("schema 0 codes exceed 255 bytes");
  return `${stringToHex(text)}${toHex(text.length, { size: 1 }).slice(2)}00${ERC8021_MARKER}`;
}

/** Schema 2 suffix: `cbor ‖ cborLength (2) ‖ 0x02 ‖ marker`, a CBOR map with an app code and optional wallet code. */
export function schema2Suffix(codes: { app?: string; wallet?: string }): Hex {
  const entries: Uint8Array[] = [];
  if (codes.app !== undefined) entries.push(cborText("a"), cborText(codes.app));
  if (codes.wallet !== undefined) entries.push(cborText("w"), cborText(codes.wallet));
  const map = concat([Uint8Array.of(0xa0 + entries.length / 2), ...entries]);
  return `${bytesToHex(map)}${toHex(map.length, { size: 2 }).slice(2)}02${ERC8021_MARKER}`;
}

/** A CBOR text string (major type 3) of under 256 bytes. */
function cborText(text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > 255) throw new Error("text too long for this encoder");
  const head = bytes.length < 24 ? Uint8Array.of(0x60 + bytes.length) : Uint8Array.of(0x78, bytes.length);
  return concat([head, bytes]);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
