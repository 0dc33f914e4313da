import type { Hex } from "viem";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
  type PaymentEvent,
  type UndecodableReason,
} from "../rows/paymentEvents.js";

/**
 * Decodes a log whose hex is already known to be well formed (see chain/rpcLog.ts).
 * Plain string slicing rather than an ABI decoder: this runs for every log in a backfill.
 */
export function decodePaymentEvent(
  topics: readonly Hex[],
  data: Hex,
): PaymentEvent | UndecodableReason {
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
