import type { Hex } from "viem";
import { describe, expect, test } from "vitest";
import type { LogRow } from "../../src/rows/logRow.js";
import {
  assignTxLogPositions,
  createStreamPositions,
  pickTwin,
  twinContent,
  type TwinCandidate,
} from "../../src/decode/preconfirmedTwins.js";

const TOKEN_A: Hex = "0x00000000000000000000000000000000000000aa";
const TOKEN_B: Hex = "0x00000000000000000000000000000000000000bb";
const TX1: Hex = `0x${"01".repeat(32)}`;
const TX2: Hex = `0x${"02".repeat(32)}`;
const TOPIC: Hex = `0x${"dd".repeat(32)}`;

/** A hand-made row: only the fields twin matching reads are meaningful. */
function row(tx: Hex, address: Hex, logIndex: number, overrides: Partial<LogRow> = {}): LogRow {
  return {
    address,
    topics: [TOPIC],
    data: "0x",
    blockNumber: 10,
    blockHash: `0x${"00".repeat(32)}`,
    transactionHash: tx,
    transactionIndex: 0,
    logIndex,
    chainId: 8453,
    blockTimestamp: 0,
    txLogPosition: -1,
    event: { kind: "authorization", authorizer: TOKEN_A, nonce: TOPIC, used: true },
    status: "preconfirmed",
    source: "pending",
    ...overrides,
  };
}

describe("assignTxLogPositions()", () => {
  test("numbers each transaction's logs per token in logIndex order", () => {
    const rows = [
      row(TX1, TOKEN_A, 3),
      row(TX1, TOKEN_B, 4),
      row(TX1, TOKEN_A, 7),
      row(TX2, TOKEN_A, 9),
    ];
    assignTxLogPositions(rows);
    expect(rows.map((r) => r.txLogPosition)).toEqual([0, 0, 1, 0]);
  });

  test("gives the same positions whatever order the node answered in", () => {
    const rows = [row(TX1, TOKEN_A, 7), row(TX2, TOKEN_A, 9), row(TX1, TOKEN_A, 3)];
    assignTxLogPositions(rows);
    expect(rows.map((r) => [r.logIndex, r.txLogPosition])).toEqual([
      [7, 1],
      [9, 0],
      [3, 0],
    ]);
  });

  test("a pre-confirmed copy (cumulative logIndex) and the confirmed one (block logIndex) get the same positions", () => {
    const pending = [row(TX1, TOKEN_A, 41), row(TX1, TOKEN_A, 42)];
    const confirmed = [
      row(TX1, TOKEN_A, 1, { status: "confirmed" }),
      row(TX1, TOKEN_A, 2, { status: "confirmed" }),
    ];
    assignTxLogPositions(pending);
    assignTxLogPositions(confirmed);
    expect(pending.map((r) => r.txLogPosition)).toEqual(confirmed.map((r) => r.txLogPosition));
  });
});

describe("createStreamPositions()", () => {
  test("numbers one-log notifications as they arrive, by logIndex among those seen", () => {
    const positions = createStreamPositions();
    expect(positions.place(row(TX1, TOKEN_A, 5))).toBe(0);
    expect(positions.place(row(TX1, TOKEN_A, 6))).toBe(1);
    expect(positions.place(row(TX1, TOKEN_B, 7))).toBe(0);
    // A repeat of a notification keeps its position.
    expect(positions.place(row(TX1, TOKEN_A, 5))).toBe(0);
  });

  test("a notification that arrives late (lower logIndex) takes its place by logIndex", () => {
    const positions = createStreamPositions();
    expect(positions.place(row(TX1, TOKEN_A, 6))).toBe(0);
    expect(positions.place(row(TX1, TOKEN_A, 5))).toBe(0);
    expect(positions.place(row(TX1, TOKEN_A, 6))).toBe(1);
  });

  test("forgets older pending blocks once a newer one streams", () => {
    const positions = createStreamPositions();
    positions.place(row(TX1, TOKEN_A, 5, { blockNumber: 10 }));
    positions.place(row(TX2, TOKEN_A, 1, { blockNumber: 11 }));
    // Block 10 was forgotten: the same log counts from scratch (its canonical block settles it).
    expect(positions.place(row(TX1, TOKEN_A, 6, { blockNumber: 10 }))).toBe(0);
  });
});

describe("pickTwin()", () => {
  const candidates: TwinCandidate[] = [
    { id: 1, txLogPosition: 0, logIndex: 40, preconfirmedAt: 100 },
    { id: 2, txLogPosition: 1, logIndex: 41, preconfirmedAt: 100 },
  ];

  test("pairs the candidate at the same position", () => {
    expect(pickTwin({ txLogPosition: 1 }, candidates)?.id).toBe(2);
    expect(pickTwin({ txLogPosition: 0 }, candidates)?.id).toBe(1);
  });

  test("falls back to the lowest logIndex when a skipped notification put the position off", () => {
    const off: TwinCandidate[] = [
      { id: 7, txLogPosition: 0, logIndex: 52, preconfirmedAt: null },
      { id: 8, txLogPosition: 0, logIndex: 51, preconfirmedAt: null },
    ];
    expect(pickTwin({ txLogPosition: 1 }, off)?.id).toBe(8);
  });

  test("finds none without candidates", () => {
    expect(pickTwin({ txLogPosition: 0 }, [])).toBeUndefined();
  });

  test("twins share content: transaction, token, topics and data; block hash and logIndex are not part of it", () => {
    const pre = row(TX1, TOKEN_A, 41, { topics: [TOPIC, `0x${"0a".repeat(32)}`] });
    const confirmed = row(TX1, TOKEN_A, 2, {
      topics: [TOPIC, `0x${"0a".repeat(32)}`],
      blockHash: `0x${"ee".repeat(32)}`,
      status: "confirmed",
    });
    expect(twinContent(pre)).toEqual(twinContent(confirmed));
    expect(twinContent(pre)).toEqual({
      txHash: TX1,
      address: TOKEN_A,
      topic0: TOPIC,
      topic1: `0x${"0a".repeat(32)}`,
      topic2: null,
      topic3: null,
      data: "0x",
    });
    expect(twinContent(row(TX2, TOKEN_A, 41))).not.toEqual(twinContent(pre));
  });
});
