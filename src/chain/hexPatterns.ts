/** A pattern a string field of an RPC answer is checked against: a RegExp, or HEX_BYTES below. */
export type HexPattern = { test(value: string): boolean };

/** 20 bytes (an address), any letter case. */
export const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** 32 bytes (a hash, a topic), any letter case. */
export const WORD = /^0x[0-9a-fA-F]{64}$/;

const SHORT_HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;
/** Above this many characters the hex decoder checks faster than the regular expression. */
const DECODER_FROM_CHARS = 256;
/** Inputs up to this many bytes are decoded into one buffer kept between calls. */
const SCRATCH_MAX_BYTES = 1 << 20;
let scratch = Buffer.allocUnsafe(0);

/**
 * Whether `value` is 0x-prefixed hex of whole bytes, in any letter case. A long one (calldata: a
 * 500-transfer call is 96,000 characters) is decoded instead of matched: Node's hex decoder stops
 * at the first pair that is not hex, so fewer bytes than the characters promise name a bad one.
 * On such inputs that costs far less CPU than the regular expression (`hex-bytes-check` in
 * scripts/bench/results/measurements.csv).
 */
export function isHexBytes(value: string): boolean {
  if (value.length < DECODER_FROM_CHARS) return SHORT_HEX_BYTES.test(value);
  if (value.length % 2 !== 0 || value.charCodeAt(0) !== 0x30 || value.charCodeAt(1) !== 0x78)
    return false;
  const bytes = (value.length - 2) / 2;
  if (bytes > SCRATCH_MAX_BYTES) return Buffer.from(value.slice(2), "hex").length === bytes;
  if (scratch.length < bytes) scratch = Buffer.allocUnsafe(Math.max(bytes, 2 * scratch.length));
  return scratch.write(value.slice(2), 0, bytes, "hex") === bytes;
}

/** isHexBytes as a pattern, where a field is checked with `pattern.test(value)`. */
export const HEX_BYTES: HexPattern = { test: isHexBytes };
