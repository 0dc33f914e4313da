import type { Hex } from "viem";

/** topic0 of the three events FiatToken v2.2 (USDC) emits: Transfer, AuthorizationUsed, AuthorizationCanceled. */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
export const AUTHORIZATION_USED_TOPIC = "0x98de503528ee59b575ef0c0a2576a82497bfc029a5685b209e9ec333479b10a5";
export const AUTHORIZATION_CANCELED_TOPIC = "0x1cdd46ff242716cdaa72d159d339a485b3438398348d68f09d7c8c0a59353d81";

export const PAYMENT_TOPICS = [TRANSFER_TOPIC, AUTHORIZATION_USED_TOPIC, AUTHORIZATION_CANCELED_TOPIC] as const;

export type PaymentEvent =
  | { kind: "transfer"; from: Hex; to: Hex; value: string }
  | { kind: "authorization"; authorizer: Hex; nonce: Hex; used: boolean };

export type EventName = "transfer" | "authorization_used" | "authorization_canceled";

export function eventName(event: PaymentEvent): EventName {
  if (event.kind === "transfer") return "transfer";
  return event.used ? "authorization_used" : "authorization_canceled";
}

/** Why a log that matched our filter could not be decoded. */
export type UndecodableReason = "unknown_topic" | "wrong_topic_count" | "wrong_data_length" | "dirty_address_word";

/**
 * Decodes a log whose hex is already known to be well formed (see chain/rpcLog.ts).
 * Plain string slicing rather than an ABI decoder: this runs for every log in a backfill.
 */
export function decodePaymentEvent(topics: readonly Hex[], data: Hex): PaymentEvent | UndecodableReason {
  const topic0 = topics[0];
  if (topic0 === TRANSFER_TOPIC) {
    if (topics.length !== 3) return "wrong_topic_count";
    if (data.length !== 66) return "wrong_data_length";
    const from = wordToAddress(topics[1]!);
    const to = wordToAddress(topics[2]!);
    if (from === undefined || to === undefined) return "dirty_address_word";
    return { kind: "transfer", from, to, value: BigInt(data).toString() };
  }
  const used = topic0 === AUTHORIZATION_USED_TOPIC;
  if (used || topic0 === AUTHORIZATION_CANCELED_TOPIC) {
    if (topics.length !== 3) return "wrong_topic_count";
    if (data !== "0x") return "wrong_data_length";
    const authorizer = wordToAddress(topics[1]!);
    if (authorizer === undefined) return "dirty_address_word";
    return { kind: "authorization", authorizer, nonce: topics[2]!, used };
  }
  return "unknown_topic";
}

const ZERO_PADDING = "000000000000000000000000";

/** The address in an indexed 32-byte word; undefined when the upper 12 bytes are not zero. */
function wordToAddress(word: Hex): Hex | undefined {
  if (word.slice(2, 26) !== ZERO_PADDING) return undefined;
  return `0x${word.slice(26)}`;
}
