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
    throw new UsageError(`${command}: ${(error as Error).message} (see flashindex ${command} --help)`);
  }
}

/** A non-negative whole block number from a flag; `name` is the flag for the message. */
export function parseBlockNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^(?:0|[1-9][0-9]*)$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new UsageError(`${name}: expected a block number (a whole number of 0 or more), got ${JSON.stringify(value)}`);
  return Number(value);
}
