import type { Hex } from "viem";

/** topic0 of the three events FiatToken v2.2 (USDC) emits: Transfer, AuthorizationUsed, AuthorizationCanceled. */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
export const AUTHORIZATION_USED_TOPIC =
  "0x98de503528ee59b575ef0c0a2576a82497bfc029a5685b209e9ec333479b10a5";
export const AUTHORIZATION_CANCELED_TOPIC =
  "0x1cdd46ff242716cdaa72d159d339a485b3438398348d68f09d7c8c0a59353d81";

export const PAYMENT_TOPICS = [
  TRANSFER_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  AUTHORIZATION_CANCELED_TOPIC,
] as const;

export type PaymentEvent =
  | { kind: "transfer"; from: Hex; to: Hex; value: string }
  | { kind: "authorization"; authorizer: Hex; nonce: Hex; used: boolean };

export type EventName = "transfer" | "authorization_used" | "authorization_canceled";

export function eventName(event: PaymentEvent): EventName {
  if (event.kind === "transfer") return "transfer";
  return event.used ? "authorization_used" : "authorization_canceled";
}

/** Why a log that matched our filter could not be decoded. */
export type UndecodableReason =
  "unknown_topic" | "wrong_topic_count" | "wrong_data_length" | "dirty_address_word";
