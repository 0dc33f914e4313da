import type { WebhookConfig } from "../config/types.js";
import type { WebhookEventRow } from "../store/types.js";

/**
 * Whether a subscription wants an event: its type (events), its token (tokens), a party (addresses:
 * payer, payee or authorizer), and for block events, a block at or after the subscription's start.
 */
export function wantsEvent(
  hook: Pick<WebhookConfig, "events" | "tokens" | "addresses">,
  fromBlock: number,
  event: WebhookEventRow,
): boolean {
  if (hook.events !== undefined && !(hook.events as readonly string[]).includes(event.type))
    return false;
  if (hook.tokens !== undefined && !hook.tokens.includes(event.token)) return false;
  if (
    hook.addresses !== undefined &&
    !hook.addresses.includes(event.payer) &&
    (event.payee === null || !hook.addresses.includes(event.payee))
  )
    return false;
  return event.blockNumber === null || event.blockNumber >= fromBlock;
}
