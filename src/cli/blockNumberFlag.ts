import { UsageError } from "../errors/base.js";

/** A non-negative whole block number from a flag; `name` is the flag for the message. */
export function parseBlockNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^(?:0|[1-9][0-9]*)$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new UsageError(
      `${name}: expected a block number (a whole number of 0 or more), got ${JSON.stringify(value)}`,
    );
  return Number(value);
}
