import {
  BaseError,
  ConfigError,
  EXIT_USAGE,
  FatalError,
  RetryableError,
  UsageError,
  exitCodeOf,
} from "../errors/base.js";
import { redactText } from "../ops/redact.js";

/** `blockNumber` → `block_number`; keys already snake_case (or not identifiers, such as addresses) stay as they are. */
export function toSnakeCase(key: string): string {
  return /^[a-z][A-Za-z0-9]*$/.test(key)
    ? key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    : key;
}

/** A deep copy with every object key in snake_case: one case across every command's JSON. */
export function toSnakeCaseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toSnakeCaseKeys);
  if (value === null || typeof value !== "object")
    return typeof value === "bigint" ? value.toString() : value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [toSnakeCase(k), toSnakeCaseKeys(v)]),
  );
}

/** Prints a command's result as its one JSON document on stdout, keys in snake_case. */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(toSnakeCaseKeys(value), null, 2));
}

/** A stable, machine-readable name for an error's kind (the exit code follows from it). */
export function errorCode(error: unknown): string {
  if (error instanceof UsageError) return "usage_error";
  if (error instanceof ConfigError) return "config_error";
  if (error instanceof RetryableError) return "temporary_failure";
  if (error instanceof FatalError) return "fatal_error";
  if (error instanceof BaseError)
    return exitCodeOf(error) === EXIT_USAGE ? "usage_error" : "failed";
  return "unexpected_error";
}

/** The one JSON document a failed `--json` command prints: `{"error": {"code", "message"}}`. */
export function jsonError(error: unknown): { error: { code: string; message: string } } {
  const message =
    error instanceof BaseError
      ? error.shortMessage
      : error instanceof Error
        ? error.message
        : String(error);
  return { error: { code: errorCode(error), message: redactText(message) } };
}
