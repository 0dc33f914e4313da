import type { Address } from "viem";
// ox's Address module, not viem's index: importing viem whole costs every command about 150 ms at start.
import { checksum, validate } from "ox/Address";
import { ConfigError } from "../errors/base.js";

/**
 * Small typed readers for untrusted JSON. Each names the offending field by its path
 * (`tokens[1].address`) so a user knows what to fix.
 */

export type JsonObject = Record<string, unknown>;

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string")
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === "object") return "an object";
  // Left: a number, a boolean or undefined (JSON, the environment and flags hold nothing else).
  return `the ${typeof value} ${String(value as number | boolean | undefined)}`;
}

/** An object whose keys are all in `allowed`; unknown keys are errors (typos must not pass silently). */
export function readObject(path: string, value: unknown, allowed: readonly string[]): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ConfigError(path, `expected an object, got ${describe(value)}`);
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new ConfigError(join(path, key), `unknown key (allowed here: ${allowed.join(", ")})`);
  }
  return value as JsonObject;
}

export function join(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return path === "" ? key : `${path}.${key}`;
}

export function readInteger(
  path: string,
  value: unknown,
  bounds: { min: number; max?: number },
): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value))
    throw new ConfigError(path, `expected a whole number, got ${describe(value)}`);
  if (value < bounds.min)
    throw new ConfigError(path, `must be at least ${bounds.min}, got ${value}`);
  if (bounds.max !== undefined && value > bounds.max)
    throw new ConfigError(path, `must be at most ${bounds.max}, got ${value}`);
  return value;
}

export function readString(path: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0)
    throw new ConfigError(path, `expected a non-empty string, got ${describe(value)}`);
  return value;
}

export function readBoolean(path: string, value: unknown): boolean {
  if (typeof value !== "boolean")
    throw new ConfigError(path, `expected true or false, got ${describe(value)}`);
  return value;
}

export function readEnum<const T extends string>(
  path: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value))
    throw new ConfigError(path, `expected one of ${allowed.join(", ")}, got ${describe(value)}`);
  return value as T;
}

/** An EVM address: 0x + 40 hex digits; mixed case must carry a valid EIP-55 checksum. */
export function readAddress(path: string, value: unknown): Address {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value))
    throw new ConfigError(
      path,
      `expected an address (0x and 40 hex digits), got ${describe(value)}`,
    );
  if (!validate(value, { strict: true }))
    throw new ConfigError(
      path,
      `bad EIP-55 checksum in ${value} (did you mean ${checksum(value)}?)`,
    );
  return checksum(value);
}

/** An http(s) or ws(s) URL. The message never echoes the URL: it may hold credentials. */
export function readUrl(path: string, value: unknown, protocols: readonly string[]): string {
  const text = readString(path, value);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(path, "is not a valid URL");
  }
  if (!protocols.includes(url.protocol))
    throw new ConfigError(
      path,
      `must use ${protocols.map((p) => p.replace(":", "://")).join(" or ")}, got ${url.protocol}//`,
    );
  return text;
}

/** Optional field: undefined stays undefined (the default applies). */
export function optional<T>(value: unknown, read: (value: unknown) => T): T | undefined {
  return value === undefined ? undefined : read(value);
}

/**
 * A Postgres connection URL (postgres:// or postgresql://) naming a host and a database. The URL
 * itself never appears in the error: it may carry a password.
 */
export function readDatabaseUrl(path: string, value: unknown): string {
  const text = readString(path, value);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(
      path,
      "is not a valid URL (expected postgres://user:password@host:5432/database)",
    );
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new ConfigError(path, `must use postgres:// or postgresql://, got ${url.protocol}//`);
  if (url.hostname === "")
    throw new ConfigError(
      path,
      "names no host (expected postgres://user:password@host:5432/database)",
    );
  if (url.pathname.length <= 1)
    throw new ConfigError(
      path,
      "names no database (expected postgres://user:password@host:5432/database)",
    );
  return text;
}
