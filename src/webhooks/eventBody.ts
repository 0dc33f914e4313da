import type { WebhookEventRow } from "../store/types.js";

export type BuilderCode = { code: string; role: string; registry: string };

/** The stable id of an outbox event: the same on every attempt and after a restart. */
export function eventId(chainId: number, outboxId: number): string {
  return `evt_${chainId}_${outboxId}`;
}

/**
 * The JSON body of one webhook POST: `{ id, type, chain_id, created_at, status, log?, payment?,
 * authorization?, order?, builder_codes }`. The snapshot (status, log, payment...) was written by
 * the trigger with the change; builder codes are those known at sending time (attribution runs
 * right after the commit, so the first attempt may come before them). Values are decimal strings.
 */
export function buildEventBody(
  chainId: number,
  event: WebhookEventRow,
  builderCodes: readonly BuilderCode[],
): string {
  const snapshot = JSON.parse(event.payload) as Record<string, unknown>;
  return JSON.stringify({
    id: eventId(chainId, event.id),
    type: event.type,
    chain_id: chainId,
    created_at: new Date(event.createdAt).toISOString(),
    ...snapshot,
    builder_codes: builderCodes,
  });
}
