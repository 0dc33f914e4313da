import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "../errors.js";

export type Options = NonNullable<ParseArgsConfig["options"]>;

/** Options every command takes. */
export const COMMON_OPTIONS = {
  config: { type: "string", short: "c" },
  db: { type: "string" },
  "log-level": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies Options;

/** Parses a command's arguments strictly: an unknown flag or a missing value is a usage error (exit 2). */
export function parseCommandArgs<const T extends Options>(command: string, args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args, options: { ...COMMON_OPTIONS, ...options }, strict: true, allowPositionals });
  } catch (error) {
    throw new UsageError(`${command}: ${describeParseError(error, args)} (see flashindex ${command} --help)`);
  }
}

/**
 * Node's parseArgs messages in our words, one line each: they speak of '--from=-XYZ' and of
 * positional arguments, not of what the user typed.
 */
export function describeParseError(error: unknown, args: readonly string[]): string {
  const message = (error as Error).message;
  const code = (error as { code?: unknown }).code;
  const flag = /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? "";
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option ${flag}`;
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") return `unexpected argument ${JSON.stringify(/'([^']*)'/.exec(message)?.[1] ?? "")}`;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    if (message.includes("does not take an argument")) return `${flag} takes no value`;
    const next = args[args.indexOf(flag) + 1];
    if (message.includes("ambiguous") && next !== undefined) return `${flag}: expected a value, got the option-like ${JSON.stringify(next)}`;
    return `${flag}: missing value`;
  }
  return message.split("\n")[0]!;
}

/** A non-negative whole block number from a flag; `name` is the flag for the message. */
export function parseBlockNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^(?:0|[1-9][0-9]*)$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new UsageError(`${name}: expected a block number (a whole number of 0 or more), got ${JSON.stringify(value)}`);
  return Number(value);
}
