import type { Hex } from "viem";
import { readCbor, type CborDocument, type CborItem } from "./cbor.js";

/**
 * ERC-8021 attribution suffixes, read backwards from the end of calldata:
 * `… schemaData ‖ schemaId (1 byte) ‖ marker (16 bytes)`.
 *
 * | schema | forward layout |
 * |---|---|
 * | 0 | `codes ‖ codesLength (1) ‖ 0x00 ‖ marker` |
 * | 1 | `registryAddress (20) ‖ chainId (n) ‖ chainIdLength (1) ‖ codes ‖ codesLength (1) ‖ 0x01 ‖ marker` |
 * | 2 | `cbor ‖ cborLength (2, big-endian) ‖ 0x02 ‖ marker` |
 *
 * Everything here works on the `0x…` hex string an RPC returns, converting only the suffix bytes,
 * because it runs once per indexed transaction and almost no calldata carries a suffix.
 */

/** The 16-byte marker without `0x`. Only decimal digits, so letter case never matters. */
const MARKER_HEX = "80218021802180218021802180218021";
export const ERC8021_MARKER: Hex = `0x${MARKER_HEX}`;
const MARKER_SIZE_BYTES = 16;
/**
 * Deepest CBOR nesting read (the top-level map is depth 1). Schema 2 itself needs 4
 * (map → r → a|w → c|a); deeper items are checked and skipped, so metadata nested past it is
 * ignored while the codes are kept.
 */
const MAX_CBOR_DEPTH = 64;
/** A chain id is at most a uint256. */
const MAX_CHAIN_ID_BYTES = 32;

export type AttributionRole = "code" | "app" | "wallet" | "service";
/** One attribution code: always 1+ bytes of printable ASCII (0x20..0x7E), never a comma. */
export type AttributionCode = { code: string; role: AttributionRole };
/** A custom code registry; `address` is lowercase. */
export type AttributionRegistry = { address: Hex; chainId: bigint };
export type AttributionRegistries = { app?: AttributionRegistry; wallet?: AttributionRegistry };

/** Fields every parsed suffix has; `suffixLength` counts bytes from the suffix's first byte through the marker. */
type CodesBase = { kind: "codes"; codes: AttributionCode[]; suffixLength: number };
export type AttributionSchema0 = CodesBase & { schemaId: 0 };
export type AttributionSchema1 = CodesBase & { schemaId: 1; registry: AttributionRegistry };
/** Roles whose custom registry `r` names; service codes always use the canonical registry. */
export type RegistryRole = "app" | "wallet";
/** A malformed `r` (or entry of it): which roles' registries are unknown, and why. */
export type AttributionRegistryError = { roles: RegistryRole[]; reason: string };

/**
 * Codes come in a fixed order: app, wallet, then services in array order. `registries` is present
 * when `r` named at least one well-formed registry; `registryError` when `r`, or an entry of it,
 * did not parse (the codes are kept, but a code of a listed role has no known registry);
 * `serviceError` when `s`, or an entry of it, was malformed (no service code is taken, the app and
 * wallet codes are kept); `metadata` is the raw CBOR of `m`'s value when present and nested no deeper
 * than MAX_CBOR_DEPTH.
 */
export type AttributionSchema2 = CodesBase & {
  schemaId: 2;
  registries?: AttributionRegistries;
  registryError?: AttributionRegistryError;
  serviceError?: string;
  metadata?: Hex;
};
export type AttributionCodes = AttributionSchema0 | AttributionSchema1 | AttributionSchema2;

export type Attribution =
  /** No marker at the end. */
  | { kind: "none" }
  /** A well-formed schema 2 suffix that names no code (an empty map, or only `r`/`m`): no attribution. */
  | { kind: "none"; schemaId: 2 }
  /** Marker present but the suffix does not parse; no codes are ever taken from it. */
  | { kind: "malformed"; schemaId: number | undefined; reason: string }
  /** Marker present with a schema id this decoder does not know: no attribution. */
  | { kind: "unknown_schema"; schemaId: number }
  | AttributionCodes;

const NONE: Attribution = Object.freeze({ kind: "none" });
const NO_CODES_SCHEMA_2: Attribution = Object.freeze({ kind: "none", schemaId: 2 });

type Result<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Decodes the ERC-8021 suffix at the end of `calldata`, the `0x`-prefixed hex an RPC returns
 * (any letter case). Pure and total: never throws, whatever the input.
 */
export function decodeAttribution(calldata: Hex): Attribution {
  try {
    return decode(calldata);
  } catch (error) {
    // Only reachable through a bug: the decoder bounds-checks every read.
    return malformed(
      undefined,
      `decoder failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** Where a code is registered: the chain's canonical registry, a custom one, or a custom one whose `r` entry did not parse. */
export type CodeRegistry =
  { kind: "canonical" } | { kind: "custom"; registry: AttributionRegistry } | { kind: "malformed" };

const CANONICAL: CodeRegistry = Object.freeze({ kind: "canonical" });

/** The registry `code` (one of `attribution.codes`) belongs to, by schema and role. */
export function registryOfCode(attribution: AttributionCodes, code: AttributionCode): CodeRegistry {
  if (attribution.schemaId === 0) return CANONICAL;
  if (attribution.schemaId === 1) return { kind: "custom", registry: attribution.registry };
  if (code.role !== "app" && code.role !== "wallet") return CANONICAL;
  if (attribution.registryError?.roles.includes(code.role)) return { kind: "malformed" };
  const registry = attribution.registries?.[code.role];
  return registry === undefined ? CANONICAL : { kind: "custom", registry };
}

function decode(calldata: string): Attribution {
  // The cheap test that almost every transaction fails: no allocation before it.
  if (typeof calldata !== "string" || !calldata.endsWith(MARKER_HEX)) return NONE;
  if (!calldata.startsWith("0x") || calldata.length % 2 !== 0) {
    return malformed(undefined, "calldata is not 0x-prefixed hex of whole bytes");
  }
  const size = (calldata.length - 2) / 2;
  // The marker alone, with no schema byte before it, is no attribution.
  if (size <= MARKER_SIZE_BYTES) return NONE;
  const schemaIndex = size - MARKER_SIZE_BYTES - 1;
  const schemaId = byteAt(calldata, schemaIndex);
  if (schemaId < 0) return malformed(undefined, "schema id is not hex");
  switch (schemaId) {
    case 0:
      return decodeSchema0(calldata, schemaIndex);
    case 1:
      return decodeSchema1(calldata, schemaIndex);
    case 2:
      return decodeSchema2(calldata, schemaIndex);
    default:
      return { kind: "unknown_schema", schemaId };
  }
}

function decodeSchema0(hex: string, schemaIndex: number): Attribution {
  const codes = readCodeList(hex, schemaIndex);
  if (!codes.ok) return malformed(0, codes.reason);
  const size = (hex.length - 2) / 2;
  return {
    kind: "codes",
    schemaId: 0,
    codes: withRole(codes.value.codes, "code"),
    suffixLength: size - codes.value.start,
  };
}

function decodeSchema1(hex: string, schemaIndex: number): Attribution {
  const codes = readCodeList(hex, schemaIndex);
  if (!codes.ok) return malformed(1, codes.reason);
  const chainIdLengthIndex = codes.value.start - 1;
  if (chainIdLengthIndex < 0) return malformed(1, "registry missing before the codes");
  const chainIdLength = byteAt(hex, chainIdLengthIndex);
  if (chainIdLength < 0) return malformed(1, "chain id length is not hex");
  if (chainIdLength === 0) return malformed(1, "chain id length is zero");
  if (chainIdLength > MAX_CHAIN_ID_BYTES) return malformed(1, "chain id longer than 32 bytes");
  const chainIdStart = chainIdLengthIndex - chainIdLength;
  const addressStart = chainIdStart - 20;
  if (addressStart < 0) return malformed(1, "registry overruns the calldata");
  const address = hexSlice(hex, addressStart, chainIdStart);
  const chainId = hexSlice(hex, chainIdStart, chainIdLengthIndex);
  if (address === undefined || chainId === undefined) return malformed(1, "registry is not hex");
  const size = (hex.length - 2) / 2;
  return {
    kind: "codes",
    schemaId: 1,
    codes: withRole(codes.value.codes, "code"),
    registry: { address: `0x${address.toLowerCase()}`, chainId: BigInt(`0x${chainId}`) },
    suffixLength: size - addressStart,
  };
}

/** Reads `codes ‖ codesLength (1)` ending just before `schemaIndex`; `start` is the first code byte. */
function readCodeList(
  hex: string,
  schemaIndex: number,
): Result<{ codes: string[]; start: number }> {
  const lengthIndex = schemaIndex - 1;
  if (lengthIndex < 0) return fail("codes length byte missing");
  const codesLength = byteAt(hex, lengthIndex);
  if (codesLength < 0) return fail("codes length is not hex");
  const start = lengthIndex - codesLength;
  if (start < 0) return fail("codes length overruns the calldata");
  if (codesLength === 0) return fail("empty code");
  // Note: a length that is too large but fits reads back into the ABI-encoded arguments; only
  // this character check catches it (ABI words are full of 0x00 bytes).
  const codes: string[] = [];
  let code = "";
  for (let i = start; i < lengthIndex; i++) {
    const byte = byteAt(hex, i);
    if (byte === 0x2c) {
      if (code === "") return fail("empty code");
      codes.push(code);
      code = "";
    } else if (byte < 0) {
      return fail("codes are not hex");
    } else if (byte < 0x20 || byte > 0x7e) {
      return fail("code byte outside printable ASCII");
    } else {
      code += String.fromCharCode(byte);
    }
  }
  if (code === "") return fail("empty code");
  codes.push(code);
  return { ok: true, value: { codes, start } };
}

function decodeSchema2(hex: string, schemaIndex: number): Attribution {
  const lengthIndex = schemaIndex - 2;
  if (lengthIndex < 0) return malformed(2, "CBOR length missing");
  const high = byteAt(hex, lengthIndex);
  const low = byteAt(hex, lengthIndex + 1);
  if (high < 0 || low < 0) return malformed(2, "CBOR length is not hex");
  const cborLength = (high << 8) | low;
  const start = lengthIndex - cborLength;
  if (start < 0) return malformed(2, "CBOR length overruns the calldata");
  if (cborLength === 0) return malformed(2, "CBOR is empty");
  const bytes = bytesAt(hex, start, lengthIndex);
  if (bytes === undefined) return malformed(2, "CBOR is not hex");
  const document = readCbor(bytes, MAX_CBOR_DEPTH);
  if (!document.ok) return malformed(2, document.reason);
  const fields = readSchema2Map(document.value, bytes);
  if (!fields.ok) return malformed(2, fields.reason);
  // An empty map, or one with only registries or metadata, attributes nothing; a malformed s alone
  // leaves nothing to credit, and says so.
  if (fields.value.codes.length === 0)
    return fields.value.serviceError === undefined
      ? NO_CODES_SCHEMA_2
      : malformed(2, fields.value.serviceError);
  const size = (hex.length - 2) / 2;
  return { kind: "codes", schemaId: 2, ...fields.value, suffixLength: size - start };
}

type Schema2Fields = {
  codes: AttributionCode[];
  registries?: AttributionRegistries;
  registryError?: AttributionRegistryError;
  serviceError?: string;
  metadata?: Hex;
};

/**
 * Interprets the top-level map. Unknown text keys are skipped (room for later ERC revisions);
 * metadata holding an item nested past MAX_CBOR_DEPTH is left out.
 */
function readSchema2Map(
  { item, deepStarts }: CborDocument,
  bytes: Uint8Array,
): Result<Schema2Fields> {
  if (item.type !== "map") return fail("CBOR is not a map");
  const entries = textKeyedEntries(item);
  if (!entries.ok) return entries;
  const keys = entries.value;
  const codes: AttributionCode[] = [];
  for (const [key, role] of [
    ["a", "app"],
    ["w", "wallet"],
  ] as const) {
    const value = keys.get(key);
    if (value === undefined) continue;
    const code = readCode(value);
    if (!code.ok) return fail(`"${key}": ${code.reason}`);
    codes.push({ code: code.value, role });
  }
  const services = readServices(keys.get("s"));
  codes.push(...withRole(services.codes, "service"));
  const fields: Schema2Fields = { codes };
  if (services.error !== undefined) fields.serviceError = services.error;
  const registriesItem = keys.get("r");
  if (registriesItem !== undefined) {
    // Note: ox drops a registry entry it cannot read and keeps the code, which then reads as a
    // canonical-registry code; here the code is kept and its registry flagged as malformed.
    const { registries, error } = readRegistries(registriesItem);
    if (registries.app !== undefined || registries.wallet !== undefined)
      fields.registries = registries;
    if (error !== undefined) fields.registryError = error;
  }
  const metadata = keys.get("m");
  if (
    metadata !== undefined &&
    !deepStarts.some((at) => at >= metadata.start && at < metadata.end)
  ) {
    fields.metadata = bytesToHex(bytes, metadata.start, metadata.end);
  }
  return { ok: true, value: fields };
}

function readCode(item: CborItem): Result<string> {
  if (item.type !== "text") return fail("code is not a text string");
  if (item.value === "") return fail("empty code");
  for (let i = 0; i < item.value.length; i++) {
    const char = item.value.charCodeAt(i);
    if (char < 0x20 || char > 0x7e) return fail("code character outside printable ASCII");
    // Schema 0/1 split on commas; one rule for all schemas keeps codes joinable without ambiguity.
    if (char === 0x2c) return fail("code contains a comma");
  }
  return { ok: true, value: item.value };
}

/**
 * Reads `s`: an array of codes, or one code as a text string (x402's builder-code extension allows
 * both). One malformed entry drops every service code, since the list's writer is then not to be
 * trusted, but not the suffix: `a` and `w` sit under keys of their own and stay valid.
 */
function readServices(item: CborItem | undefined): { codes: string[]; error?: string } {
  if (item === undefined) return { codes: [] };
  if (item.type === "text") {
    const code = readCode(item);
    return code.ok ? { codes: [code.value] } : { codes: [], error: `"s": ${code.reason}` };
  }
  if (item.type !== "array")
    return { codes: [], error: `"s" is neither a text string nor an array` };
  const codes: string[] = [];
  for (const [index, service] of item.items.entries()) {
    const code = readCode(service);
    if (!code.ok) return { codes: [], error: `"s"[${index}]: ${code.reason}` };
    codes.push(code.value);
  }
  return { codes };
}

/** Reads `r`; a malformed entry flags its role, a malformed `r` itself flags both. Never fails the suffix. */
function readRegistries(item: CborItem): {
  registries: AttributionRegistries;
  error?: AttributionRegistryError;
} {
  const registries: AttributionRegistries = {};
  const entries = textKeyedEntries(item);
  if (!entries.ok)
    return { registries, error: { roles: ["app", "wallet"], reason: `"r": ${entries.reason}` } };
  const roles: RegistryRole[] = [];
  const reasons: string[] = [];
  for (const [key, value] of entries.value) {
    if (key !== "a" && key !== "w") continue;
    const role = key === "a" ? "app" : "wallet";
    const registry = readRegistry(value);
    if (registry.ok) {
      registries[role] = registry.value;
    } else {
      roles.push(role);
      reasons.push(`"r"."${key}": ${registry.reason}`);
    }
  }
  return roles.length === 0
    ? { registries }
    : { registries, error: { roles: roles.sort(), reason: reasons.join("; ") } };
}

/** `{ c: chainId, a: address }`, each as `0x…` text (what ox writes) or as a byte string. */
function readRegistry(item: CborItem): Result<AttributionRegistry> {
  const entries = textKeyedEntries(item);
  if (!entries.ok) return entries;
  const fields = entries.value;
  const chainIdItem = fields.get("c");
  const addressItem = fields.get("a");
  if (chainIdItem === undefined || addressItem === undefined) return fail("registry lacks c or a");
  const chainId = registryHex(chainIdItem);
  const address = registryHex(addressItem);
  if (chainId === undefined || chainId.length === 0 || chainId.length > MAX_CHAIN_ID_BYTES * 2) {
    return fail("registry chain id is not 1 to 32 bytes of hex");
  }
  if (address === undefined || address.length !== 40)
    return fail("registry address is not 20 bytes of hex");
  return {
    ok: true,
    value: { address: `0x${address.toLowerCase()}`, chainId: BigInt(`0x${chainId}`) },
  };
}

/** The hex digits (no `0x`) of a `0x…` text or byte-string item, or undefined. */
function registryHex(item: CborItem): string | undefined {
  if (item.type === "bytes") return bytesToHex(item.value, 0, item.value.length).slice(2);
  if (item.type !== "text" || !/^0x[0-9a-fA-F]*$/.test(item.value)) return undefined;
  return item.value.slice(2);
}

function textKeyedEntries(item: CborItem): Result<Map<string, CborItem>> {
  if (item.type !== "map") return fail("not a map");
  const entries = new Map<string, CborItem>();
  for (const [key, value] of item.entries) {
    if (key.type !== "text") return fail("map key is not a text string");
    if (entries.has(key.value)) return fail(`duplicate key "${key.value}"`);
    entries.set(key.value, value);
  }
  return { ok: true, value: entries };
}

// ---- Hex helpers working in place on the `0x…` string (byte index i sits at chars 2+2i, 3+2i) ----

function nibble(char: number): number {
  if (char >= 48 && char <= 57) return char - 48; // 0-9
  if (char >= 97 && char <= 102) return char - 87; // a-f
  if (char >= 65 && char <= 70) return char - 55; // A-F
  return -1;
}

/** The byte at `index`, or -1 when those two characters are not hex. */
function byteAt(hex: string, index: number): number {
  const high = nibble(hex.charCodeAt(2 + index * 2));
  const low = nibble(hex.charCodeAt(3 + index * 2));
  return high < 0 || low < 0 ? -1 : (high << 4) | low;
}

function bytesAt(hex: string, start: number, end: number): Uint8Array | undefined {
  const bytes = new Uint8Array(end - start);
  for (let i = start; i < end; i++) {
    const byte = byteAt(hex, i);
    if (byte < 0) return undefined;
    bytes[i - start] = byte;
  }
  return bytes;
}

/** Hex digits (no `0x`) of bytes [start, end), or undefined when they are not hex. */
function hexSlice(hex: string, start: number, end: number): string | undefined {
  const digits = hex.slice(2 + start * 2, 2 + end * 2);
  return /^[0-9a-fA-F]*$/.test(digits) ? digits : undefined;
}

function bytesToHex(bytes: Uint8Array, start: number, end: number): Hex {
  let hex = "0x";
  for (let i = start; i < end; i++) hex += (bytes[i] ?? 0).toString(16).padStart(2, "0");
  return hex as Hex;
}

function withRole(codes: string[], role: AttributionRole): AttributionCode[] {
  return codes.map((code) => ({ code, role }));
}

function malformed(schemaId: number | undefined, reason: string): Attribution {
  return { kind: "malformed", schemaId, reason };
}

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}
