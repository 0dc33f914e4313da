import { isAddress, type Address, type Hex } from "viem";
import { UsageError } from "../errors/base.js";

/** Largest uint256: token values and EIP-3009 times are uint256 on chain. */
const MAX_UINT256 = 2n ** 256n - 1n;

/** Every parser names the flag (or positional) in its one-line message: a bad value is exit 2. */
function required(name: string, value: string | undefined): string {
  if (value === undefined || value === "") throw new UsageError(`${name}: missing (required)`);
  return value;
}

/** A 0x address (any case; a mixed-case one must carry a valid checksum), returned lower-case. */
export function parseAddressFlag(name: string, value: string | undefined): Address {
  const text = required(name, value);
  if (!isAddress(text))
    throw new UsageError(
      `${name}: expected a 0x address of 20 bytes (valid checksum when mixed case), got ${JSON.stringify(text)}`,
    );
  return text.toLowerCase() as Address;
}

/**
 * A bytes32 as 0x + 64 hex digits, returned lower-case. The message never echoes the value: a
 * private key (also 32 bytes) pasted in the wrong place must not come back on screen.
 */
export function parseBytes32Flag(name: string, value: string | undefined): Hex {
  const text = required(name, value);
  if (!/^0x[0-9a-fA-F]{64}$/.test(text))
    throw new UsageError(
      `${name}: expected 32 bytes of hex (0x + 64 digits), got ${text.length} characters`,
    );
  return text.toLowerCase() as Hex;
}

/** A uint256 written in decimal. */
export function parseUint256Flag(name: string, value: string | undefined): bigint {
  const text = required(name, value);
  if (!/^(?:0|[1-9][0-9]*)$/.test(text) || BigInt(text) > MAX_UINT256)
    throw new UsageError(
      `${name}: expected a whole number from 0 to 2^256-1 in decimal, got ${JSON.stringify(text)}`,
    );
  return BigInt(text);
}

/** Unix seconds that fit a JavaScript number exactly (and so a SQLite integer). */
export function parseUnixSecondsFlag(name: string, value: string | undefined): number {
  const seconds = parseUint256Flag(name, value);
  if (seconds > BigInt(Number.MAX_SAFE_INTEGER))
    throw new UsageError(
      `${name}: ${seconds} is too large for unix seconds (at most ${Number.MAX_SAFE_INTEGER})`,
    );
  return Number(seconds);
}

/** The longest signature accepted, in bytes: passkey wallets sign hundreds of bytes, not this many. */
const MAX_SIGNATURE_BYTES = 16_384;

/**
 * A signature as hex bytes: 65 bytes r ‖ s ‖ v from an EOA, or a smart wallet's of any length (up to
 * MAX_SIGNATURE_BYTES). Whether the length suits the authorizer is the token's rule, checked against the chain.
 */
export function parseSignatureFlag(name: string, value: string | undefined): Hex {
  const text = required(name, value);
  if (!/^0x(?:[0-9a-fA-F]{2})+$/.test(text) || text.length > 2 + 2 * MAX_SIGNATURE_BYTES)
    throw new UsageError(
      `${name}: expected a signature as hex bytes (0x + an even number of hex digits: 65 bytes r ‖ s ‖ v, or a wallet's), got ${text.length} characters`,
    );
  return text.toLowerCase() as Hex;
}

/** A positive whole id. */
export function parseIdFlag(name: string, value: string | undefined): number {
  const text = required(name, value);
  if (!/^[1-9][0-9]*$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw new UsageError(
      `${name}: expected an order id (a whole number from 1), got ${JSON.stringify(text)}`,
    );
  return Number(text);
}

/** One of `choices`. */
export function parseChoiceFlag<const T extends string>(
  name: string,
  value: string | undefined,
  choices: readonly T[],
): T {
  const text = required(name, value);
  if (!(choices as readonly string[]).includes(text))
    throw new UsageError(
      `${name}: expected one of ${choices.join(", ")}, got ${JSON.stringify(text)}`,
    );
  return text as T;
}
