import { describe, expect, test } from "vitest";
import type { Hex } from "viem";
import { checkAnswer, getLogsParams } from "../../src/chain/getLogs.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  PAYMENT_TOPICS,
  TRANSFER_TOPIC,
} from "../../src/rows/paymentEvents.js";
import { selectionFilters, topicWord } from "../../src/sync/watchedLogs.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" as Hex;
const OTHER_TOKEN = "0x4200000000000000000000000000000000000006" as Hex;
const SHOP = "0x000000000000000000000000000000000000c0de" as Hex;
const BUYER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" as Hex;

describe("selectionFilters()", () => {
  test("asks for a watched token by topic: from watched, to watched, the authorizer watched or of an order; tokens read whole in one filter", () => {
    const filters = selectionFilters({
      from: 10,
      to: 20,
      addresses: [OTHER_TOKEN],
      topic0: PAYMENT_TOPICS,
      watched: [{ token: TOKEN, addresses: [SHOP], authorizers: [BUYER] }],
    });
    expect(filters.map(getLogsParams)).toEqual([
      [{ fromBlock: "0xa", toBlock: "0x14", address: [OTHER_TOKEN], topics: [PAYMENT_TOPICS] }],
      [
        {
          fromBlock: "0xa",
          toBlock: "0x14",
          address: [TOKEN],
          topics: [[TRANSFER_TOPIC], [topicWord(SHOP)]],
        },
      ],
      [
        {
          fromBlock: "0xa",
          toBlock: "0x14",
          address: [TOKEN],
          topics: [[TRANSFER_TOPIC], null, [topicWord(SHOP)]],
        },
      ],
      [
        {
          fromBlock: "0xa",
          toBlock: "0x14",
          address: [TOKEN],
          topics: [
            [AUTHORIZATION_USED_TOPIC, AUTHORIZATION_CANCELED_TOPIC],
            [topicWord(SHOP), topicWord(BUYER)],
          ],
        },
      ],
    ]);
  });

  test("sets apart a log a provider sent although its topics are outside the filter", () => {
    const [fromShop] = selectionFilters({
      pending: true,
      addresses: [],
      topic0: PAYMENT_TOPICS,
      watched: [{ token: TOKEN, addresses: [SHOP], authorizers: [] }],
    });
    const log = (from: Hex) => ({
      address: TOKEN,
      topics: [TRANSFER_TOPIC, topicWord(from), topicWord(SHOP)],
      data: `0x${"0".repeat(63)}1`,
      blockNumber: "0x5",
      blockHash: `0x${"0".repeat(64)}`,
      transactionHash: `0x${"ab".repeat(32)}`,
      transactionIndex: "0x0",
      logIndex: "0x0",
      removed: false,
    });
    const answer = checkAnswer([log(SHOP), { ...log(BUYER), logIndex: "0x1" }], fromShop!);
    expect(answer.logs.map((l) => l.topics[1])).toEqual([topicWord(SHOP)]);
    expect(answer.outOfFilter.map((o) => [o.log.topics[1], o.reason])).toEqual([
      [topicWord(BUYER), "unrequested_topic"],
    ]);
  });
});
