import type { Address, Hex } from "viem";
import { schema2Suffix } from "../attribution/erc8021Suffix.js";
import { describe } from "../config/fields.js";
import type { Logger } from "../ops/logger.js";
import type { Store } from "../store/store.js";
import { BUILDER_CODE_EXTENSION } from "./wire.js";

/**
 * The `builder-code` extension (specs/extensions/builder_code.md): the payload carries the app's
 * code `a` and service codes `s` (a string or an array); the facilitator adds its own code `w` and
 * appends all of them to the settlement's calldata as an ERC-8021 schema 2 suffix. `a` and `s` are
 * self-reported and cannot be verified, only checked for form.
 */

/** The extension's code format. */
const BUILDER_CODE_PATTERN = /^[a-z0-9_]{1,32}$/;
/** Each party's reservation in `s` (MAX_CLIENT_SERVICE_CODES, MAX_SERVER_SERVICE_CODES). */
export const MAX_CLIENT_SERVICE_CODES = 5;
export const MAX_SERVER_SERVICE_CODES = 5;
/**
 * The facilitator cannot tell the client's entries from the server's in the merged `s`; the spec
 * has it truncate them to the two reservations together.
 */
const MAX_ECHOED_SERVICE_CODES = MAX_CLIENT_SERVICE_CODES + MAX_SERVER_SERVICE_CODES;

/** Whether `code` is a builder code of the extension's format (`^[a-z0-9_]{1,32}$`). */
export function isBuilderCode(code: unknown): code is string {
  return typeof code === "string" && BUILDER_CODE_PATTERN.test(code);
}

/** The codes a payload names, each of the right form, and what was dropped from it and why. */
export type PayloadBuilderCodes = { app?: string; services: string[]; problems: string[] };

/**
 * Reads `a` and `s` from `extensions["builder-code"].info` (where @x402/extensions' client writes
 * them; the spec's example puts them on the extension itself, also read when there is no `info`).
 * Like the reference facilitator, a code of the wrong form is dropped rather than refusing the
 * payment, and `s` is cut to MAX_ECHOED_SERVICE_CODES; each drop is named in `problems`. Repeated
 * service codes are kept once. Total: never throws.
 */
export function readPayloadBuilderCodes(extensions: Record<string, unknown>): PayloadBuilderCodes {
  const result: PayloadBuilderCodes = { services: [], problems: [] };
  const extension = extensions[BUILDER_CODE_EXTENSION];
  if (extension === undefined) return result;
  const path = `extensions["${BUILDER_CODE_EXTENSION}"]`;
  if (!isObject(extension)) {
    result.problems.push(`${path}: expected an object, got ${describe(extension)}`);
    return result;
  }
  const info = extension.info === undefined ? extension : extension.info;
  const infoPath = extension.info === undefined ? path : `${path}.info`;
  if (!isObject(info)) {
    result.problems.push(`${infoPath}: expected an object, got ${describe(info)}`);
    return result;
  }
  if (info.a !== undefined) {
    if (isBuilderCode(info.a)) result.app = info.a;
    else
      result.problems.push(
        `${infoPath}.a: expected a builder code (${BUILDER_CODE_PATTERN.source}), got ${describe(info.a)}`,
      );
  }
  if (info.s === undefined) return result;
  const candidates: unknown[] =
    typeof info.s === "string" ? [info.s] : Array.isArray(info.s) ? info.s : [];
  if (typeof info.s !== "string" && !Array.isArray(info.s))
    result.problems.push(
      `${infoPath}.s: expected a builder code or an array of them, got ${describe(info.s)}`,
    );
  for (const [index, code] of candidates.entries()) {
    if (!isBuilderCode(code))
      result.problems.push(
        `${infoPath}.s[${index}]: expected a builder code (${BUILDER_CODE_PATTERN.source}), got ${describe(code)}`,
      );
    else if (!result.services.includes(code)) result.services.push(code);
  }
  if (result.services.length > MAX_ECHOED_SERVICE_CODES) {
    result.problems.push(
      `${infoPath}.s: ${result.services.length} service codes, more than the ${MAX_ECHOED_SERVICE_CODES} client and server codes allowed; kept the first ${MAX_ECHOED_SERVICE_CODES}`,
    );
    result.services = result.services.slice(0, MAX_ECHOED_SERVICE_CODES);
  }
  return result;
}

/**
 * The ERC-8021 schema 2 suffix carrying the payload's `a` and `s` and the facilitator's own code
 * `w`, or undefined when there is no code at all (the calldata then goes out unchanged).
 * `facilitatorCode` must be a builder code: the config is checked at start-up, so a bad one here
 * is a bug and throws.
 */
export function builderCodeSuffix(
  codes: { app?: string | undefined; services?: readonly string[] | undefined },
  facilitatorCode?: string,
): Hex | undefined {
  if (facilitatorCode !== undefined && !isBuilderCode(facilitatorCode))
    throw new Error(
      `facilitator builder code ${JSON.stringify(facilitatorCode)} is not of the form ${BUILDER_CODE_PATTERN.source}`,
    );
  const services = codes.services ?? [];
  if (codes.app === undefined && facilitatorCode === undefined && services.length === 0)
    return undefined;
  return schema2Suffix({ app: codes.app, wallet: facilitatorCode, services });
}

/**
 * The facilitator's own code `w`: `facilitator.builderCode` when set, else the code
 * `flashindex register` stored for the relayer wallet (the wallet that sends the settlements is
 * the one the code was registered for). A stored code the extension's format cannot carry is left
 * out with a warning rather than stopping the facilitator. Undefined when there is neither.
 */
export async function facilitatorBuilderCode(
  deps: { store: Pick<Store, "registration">; logger: Logger },
  configured: string | undefined,
  relayer: Address,
): Promise<string | undefined> {
  if (configured !== undefined) return configured;
  const stored = (await deps.store.registration(relayer))?.builderCode;
  if (stored === undefined || isBuilderCode(stored)) return stored;
  deps.logger.warn({
    msg: "Skipped registered builder code",
    relayer,
    builder_code: stored,
    reason: `not of the form ${BUILDER_CODE_PATTERN.source}`,
  });
  return undefined;
}

/** `calldata` with `suffix` appended (ERC-8021 suffixes go after the ABI-encoded arguments). */
export function appendSuffix(calldata: Hex, suffix: Hex | undefined): Hex {
  return suffix === undefined ? calldata : `${calldata}${suffix.slice(2)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
