import { createHash } from "node:crypto";
import type { Hex } from "viem";
import { describe } from "../config/fields.js";
import { INVALID_REASONS as R, refuse, type Refusal } from "./invalidReasons.js";
import { PAYMENT_IDENTIFIER_EXTENSION } from "./wire.js";

/**
 * The `payment-identifier` extension (specs/extensions/payment_identifier.md): a client-chosen id
 * of 16–128 characters of [A-Za-z0-9_-] is an idempotency key. The id is bound to the exact
 * PaymentPayload it came with (a fingerprint of it): the same id with the same payload gets the
 * first answer again, the same id with another payload is refused with HTTP 409 and
 * `payment_identifier_conflict`, and a repeat that arrives while the first is still being
 * processed waits for the first's answer instead of being processed twice.
 */

/** The extension's id bounds and alphabet (@x402/extensions 2.27's PAYMENT_ID_*). */
const ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
/** The HTTP status of a conflict, as the extension specifies. */
export const PAYMENT_IDENTIFIER_CONFLICT_STATUS = 409;
/** Deepest JSON nesting fingerprinted; a deeper payload is refused rather than recursed into. */
const MAX_PAYLOAD_DEPTH = 64;

export type PaymentIdentifier =
  /** No extension, or the extension echoed without an id: no idempotency by id. */
  | { kind: "absent" }
  | { kind: "present"; id: string; fingerprint: Hex }
  | { kind: "invalid"; refusal: Refusal };

/**
 * Reads the id from `paymentPayload.extensions["payment-identifier"].info.id` and fingerprints the
 * payload. The extension's JSON Schema travels with it; it is not compiled here, since a schema
 * from the client is as hostile as the rest of the body (a pattern in it could be made to
 * backtrack for minutes). Total: never throws.
 */
export function readPaymentIdentifier(paymentPayload: {
  extensions?: Record<string, unknown> | null;
}): PaymentIdentifier {
  const extension = paymentPayload.extensions?.[PAYMENT_IDENTIFIER_EXTENSION];
  if (extension === undefined) return { kind: "absent" };
  const path = `paymentPayload.extensions["${PAYMENT_IDENTIFIER_EXTENSION}"]`;
  if (!isObject(extension))
    return invalid(`${path}: expected an object, got ${describe(extension)}`);
  const info = extension.info;
  if (!isObject(info)) return invalid(`${path}.info: expected an object, got ${describe(info)}`);
  if (info.id === undefined) return { kind: "absent" };
  if (typeof info.id !== "string" || !ID_PATTERN.test(info.id))
    return invalid(
      `${path}.info.id: expected 16 to 128 characters of letters, digits, "-" and "_", got ${describe(info.id)}`,
    );
  const fingerprint = fingerprintPayload(paymentPayload);
  if (fingerprint === undefined)
    return invalid(`paymentPayload: nested deeper than ${MAX_PAYLOAD_DEPTH} levels`);
  return { kind: "present", id: info.id, fingerprint };
}

/** The refusal of a payload that reuses `id` with other content. */
export function paymentIdentifierConflict(id: string): Refusal {
  return refuse(
    R.paymentIdentifierConflict,
    `payment identifier ${id} was already used with a different payment payload`,
  );
}

/** What to do with an id given what was stored for it, for a facilitator that keeps ids in its store. */
export function judgePaymentIdentifier(
  stored: { fingerprint: Hex } | undefined,
  fingerprint: Hex,
): "new" | "same" | "conflict" {
  if (stored === undefined) return "new";
  return stored.fingerprint === fingerprint ? "same" : "conflict";
}

/**
 * The answer to a claim on an id: `first` processes the request and must call `answer` (or
 * `abandon`, when it has no answer to give, so a later repeat is processed afresh); `repeat`
 * resolves to the first's answer, or to undefined if the first was abandoned (answer with an error
 * the client may retry); `conflict` is refused with paymentIdentifierConflict.
 */
export type PaymentIdentifierClaim<A> =
  | { kind: "first"; answer: (value: A) => void; abandon: () => void }
  | { kind: "repeat"; answer: Promise<A | undefined> }
  | { kind: "conflict" };

export type PaymentIdentifierCache<A> = {
  claim: (id: string, fingerprint: Hex) => PaymentIdentifierClaim<A>;
  /** Entries held (in flight and answered). */
  size: () => number;
};

type Entry<A> = {
  fingerprint: Hex;
  createdAtMs: number;
  answer: Promise<A | undefined>;
  resolve: (value: A | undefined) => void;
};

/**
 * An in-process cache of ids, their payload fingerprints and answers, for one endpoint (verify and
 * settle answer differently: give each its own). Entries live `ttlMs` from their first claim; past
 * `maxEntries` the oldest is dropped. A restart forgets every id.
 */
export function createPaymentIdentifierCache<A>(options: {
  maxEntries: number;
  ttlMs: number;
  nowMs?: () => number;
}): PaymentIdentifierCache<A> {
  const nowMs = options.nowMs ?? Date.now;
  const entries = new Map<string, Entry<A>>();

  function prune(now: number): void {
    // Map keeps insertion order, which is creation order: the oldest come first.
    for (const [id, entry] of entries) {
      if (now - entry.createdAtMs < options.ttlMs && entries.size <= options.maxEntries) break;
      entries.delete(id);
    }
  }

  return {
    claim(id, fingerprint) {
      const now = nowMs();
      prune(now);
      const existing = entries.get(id);
      if (existing !== undefined)
        return existing.fingerprint === fingerprint
          ? { kind: "repeat", answer: existing.answer }
          : { kind: "conflict" };
      let resolve!: (value: A | undefined) => void;
      const answer = new Promise<A | undefined>((done) => (resolve = done));
      const entry: Entry<A> = { fingerprint, createdAtMs: now, answer, resolve };
      entries.set(id, entry);
      prune(now);
      return {
        kind: "first",
        answer: (value) => resolve(value),
        abandon: () => {
          if (entries.get(id) === entry) entries.delete(id);
          resolve(undefined);
        },
      };
    },
    size: () => entries.size,
  };
}

function invalid(message: string): PaymentIdentifier {
  return { kind: "invalid", refusal: refuse(R.invalidPayload, message) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** SHA-256 of the payload's canonical JSON (object keys sorted), so key order does not matter. */
function fingerprintPayload(payload: unknown): Hex | undefined {
  const canonical = canonicalJson(payload, 0);
  return canonical === undefined
    ? undefined
    : `0x${createHash("sha256").update(canonical).digest("hex")}`;
}

function canonicalJson(value: unknown, depth: number): string | undefined {
  if (depth > MAX_PAYLOAD_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const items: string[] = [];
    for (const item of value) {
      const text = canonicalJson(item, depth + 1);
      if (text === undefined) return undefined;
      items.push(text);
    }
    return `[${items.join(",")}]`;
  }
  if (isObject(value)) {
    const fields: string[] = [];
    for (const key of Object.keys(value).sort()) {
      if (value[key] === undefined) continue;
      const text = canonicalJson(value[key], depth + 1);
      if (text === undefined) return undefined;
      fields.push(`${JSON.stringify(key)}:${text}`);
    }
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
