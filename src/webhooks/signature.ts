import { createHmac, timingSafeEqual } from "node:crypto";

/** The header that carries the signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = "flashindex-signature";
/**
 * The header that carries the event's stable id, the same on every retry. The signature does not cover
 * it: a receiver de-duplicates on the signed body's `id`, which holds the same value.
 */
export const EVENT_ID_HEADER = "flashindex-event-id";
export const EVENT_TYPE_HEADER = "flashindex-event-type";

/** HMAC-SHA256 (hex) of `${timestampSeconds}.${body}` with the subscription's secret. */
export function signBody(secret: string, timestampSeconds: number, body: string): string {
  return createHmac("sha256", secret).update(`${timestampSeconds}.${body}`).digest("hex");
}

/** The value of the signature header for `body` sent at `timestampSeconds`. */
export function signatureHeader(secret: string, timestampSeconds: number, body: string): string {
  return `t=${timestampSeconds},v1=${signBody(secret, timestampSeconds, body)}`;
}

/**
 * What a receiver does (docs/operations.md, "Verifying a webhook"): recompute the HMAC over the raw body and
 * compare in constant time; refuse a timestamp older than `toleranceSeconds` (replays).
 */
export function verifySignature(
  header: string,
  body: string,
  secret: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const parts = new Map(header.split(",").map((part) => part.split("=", 2) as [string, string]));
  const t = Number(parts.get("t"));
  const v1 = parts.get("v1");
  if (!Number.isSafeInteger(t) || v1 === undefined || !/^[0-9a-f]{64}$/.test(v1)) return false;
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  return timingSafeEqual(Buffer.from(v1, "hex"), Buffer.from(signBody(secret, t, body), "hex"));
}
