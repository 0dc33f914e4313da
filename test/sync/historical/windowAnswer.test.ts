import { describe, expect, test } from "vitest";
import { parseRpcLog } from "../../../src/chain/rpcLog.js";
import { toLogRows } from "../../../src/decode/toLogRows.js";
import { buffersToMove, packRows, unpackStrings } from "../../../src/rows/packedRows.js";
import {
  AUTHORIZATION_USED_TOPIC,
  PAYMENT_TOPICS,
  TRANSFER_TOPIC,
} from "../../../src/rows/paymentEvents.js";
import { decodeWindowAnswer } from "../../../src/sync/historical/windowAnswer.js";
import { createWindowDecoder } from "../../../src/sync/historical/windowDecoder.js";
import {
  DECODE_THREAD_MIN_ANSWER_BYTES,
  DECODE_THREAD_NICE_IN_DAEMON,
} from "../../../src/ops/threadSettings.js";
import { threadNices, word } from "../../helpers/fixtures.js";
import { UNKNOWN_TIMESTAMP, type WindowAnswer } from "../../../src/decode/decodedWindow.js";

const TOKEN = "0x00000000000000000000000000000000000f1a54";
const filter = { from: 100, to: 109, addresses: [TOKEN], topic0: [...PAYMENT_TOPICS] } as const;

/** A log as a node sends it (hex quantities, mixed-case hex where a node may use it). */
function rpcLog(block: number, logIndex: number, overrides: Record<string, unknown> = {}) {
  return {
    address: TOKEN.toUpperCase().replace("0X", "0x"),
    topics: [TRANSFER_TOPIC, word("a11ce"), word("b0b")],
    data: word((logIndex + 1).toString(16)),
    blockNumber: `0x${block.toString(16)}`,
    blockHash: word(`b${block}`),
    blockTimestamp: `0x${(1_700_000_000 + block).toString(16)}`,
    transactionHash: word(`7${block}${logIndex % 2}`),
    transactionIndex: "0x0",
    logIndex: `0x${logIndex.toString(16)}`,
    removed: false,
    ...overrides,
  };
}

const answer = (body: string | Uint8Array, finalized = 104): WindowAnswer => ({
  body,
  id: 7,
  endpoint: "http://node.test",
  filter,
  chainId: 8453,
  finalized,
});
const bodyOf = (result: unknown, id = 7) => JSON.stringify({ jsonrpc: "2.0", id, result });

describe("decodeWindowAnswer()", () => {
  test("packs exactly the rows that decoding the same logs on the caller's thread gives, from text or bytes", () => {
    const logs = [rpcLog(100, 0), rpcLog(100, 1), rpcLog(105, 0), rpcLog(109, 3)];
    const expected = toLogRows(
      logs.map((l, i) => parseRpcLog(l, `log ${i}`)),
      {
        chainId: 8453,
        statusOf: (b) => (b <= 104 ? "finalized" : "confirmed"),
        source: "backfill",
        timestampOf: () => 0,
      },
    ).rows;
    for (const body of [bodyOf(logs), new TextEncoder().encode(bodyOf(logs))]) {
      const decoded = decodeWindowAnswer(answer(body));
      if (decoded.kind !== "rows") throw new Error(`decoded as ${decoded.kind}`);
      expect(decoded.rows.count).toBe(4);
      expect(unpackStrings(decoded.rows)).toEqual(unpackStrings(packRows(expected)));
      expect([...decoded.rows.numbers]).toEqual([...packRows(expected).numbers]);
      expect(decoded.txHashes).toEqual(expected.map((r) => r.transactionHash));
      expect(decoded.untimed).toEqual([]);
      expect(decoded.rejected).toEqual([]);
      // Both buffers can move to another thread: each holds exactly the rows' bytes, not a slice of a shared pool.
      expect(buffersToMove(decoded.rows).map((b) => b.byteLength)).toEqual([
        4 * 6 * 8,
        (decoded.rows.text as Uint8Array).byteLength,
      ]);
    }
  });

  test("marks blocks whose logs carried no timestamp, and reports logs outside the filter or undecodable", () => {
    const logs = [
      rpcLog(101, 0, { blockTimestamp: undefined }),
      rpcLog(101, 1, { blockTimestamp: null }),
      rpcLog(102, 0),
      rpcLog(150, 0),
      rpcLog(102, 1, { address: "0x00000000000000000000000000000000000000aa" }),
      rpcLog(102, 2, { topics: [AUTHORIZATION_USED_TOPIC, word("a11ce")] }),
    ];
    const decoded = decodeWindowAnswer(answer(bodyOf(logs)));
    if (decoded.kind !== "rows") throw new Error(`decoded as ${decoded.kind}`);
    expect(decoded.rows.count).toBe(3);
    expect(decoded.untimed).toEqual([[101, word("b101")]]);
    expect([decoded.rows.numbers[1], decoded.rows.numbers[7], decoded.rows.numbers[13]]).toEqual([
      UNKNOWN_TIMESTAMP,
      UNKNOWN_TIMESTAMP,
      1_700_000_102,
    ]);
    expect(decoded.rejected.map((r) => [r.reason, r.log.blockNumber, r.log.logIndex])).toEqual([
      ["outside_range", 150, 0],
      ["unrequested_address", 102, 1],
      ["wrong_topic_count", 102, 2],
    ]);
  });

  test("hands back a node's error as sent, and calls anything malformed damaged, naming what and where", () => {
    const error = {
      code: -32005,
      message: "query returned more than 10000 results",
      data: { from: "0x64" },
    };
    expect(decodeWindowAnswer(answer(JSON.stringify({ jsonrpc: "2.0", id: 7, error })))).toEqual({
      kind: "nodeError",
      error,
    });
    expect(decodeWindowAnswer(answer('{"jsonrpc":"2.0","id":7,"result":[{"addr'))).toEqual({
      kind: "damaged",
      message: "http://node.test answered with invalid JSON",
    });
    expect(decodeWindowAnswer(answer(bodyOf([], 8)))).toEqual({
      kind: "damaged",
      message: "http://node.test answered eth_getLogs with id 8, expected 7",
    });
    expect(decodeWindowAnswer(answer(bodyOf({ logs: [] })))).toEqual({
      kind: "damaged",
      message: "eth_getLogs answered with a non-array result",
    });
    expect(
      decodeWindowAnswer(answer(bodyOf([rpcLog(100, 0), rpcLog(100, 1, { data: "0xabc" })]))),
    ).toEqual({
      kind: "damaged",
      message: "eth_getLogs result[1].data is malformed hex",
    });
    expect(
      decodeWindowAnswer(
        answer(bodyOf([rpcLog(100, 0), rpcLog(100, 1, { blockHash: word("beef") })])),
      ),
    ).toMatchObject({
      kind: "damaged",
      message: expect.stringContaining("two hashes for block 100"),
    });
  });
});

describe("createWindowDecoder()", () => {
  test("decodes on this thread until `threadAfterLogs`, then on the decode thread, with the same results", async () => {
    const decoder = createWindowDecoder({ threadAfterLogs: 3 });
    try {
      const logs = [rpcLog(100, 0), rpcLog(101, 0), rpcLog(102, 0), rpcLog(103, 0)];
      const inline = await decoder.decode(answer(bodyOf(logs)));
      const body = new Uint8Array(new TextEncoder().encode(bodyOf(logs)));
      const threaded = await decoder.decode(answer(body));
      // The body moved to the decode thread: it is detached here.
      expect(body.byteLength).toBe(0);
      if (inline.kind !== "rows" || threaded.kind !== "rows") throw new Error("not decoded");
      expect(unpackStrings(threaded.rows)).toEqual(unpackStrings(inline.rows));
      expect([...threaded.rows.numbers]).toEqual([...inline.rows.numbers]);
      expect(await decoder.decode(answer("not json"))).toEqual({
        kind: "damaged",
        message: "http://node.test answered with invalid JSON",
      });
    } finally {
      await decoder.close();
    }
  });

  test("an answer too large to decode without holding up the main thread goes to the decode thread at once", async () => {
    const decoder = createWindowDecoder({ threadAfterLogs: 1_000_000 });
    try {
      const small = new Uint8Array(new TextEncoder().encode(bodyOf([rpcLog(100, 0)])));
      await decoder.decode(answer(small));
      expect(small.byteLength).toBeGreaterThan(0);
      const logs = Array.from({ length: 600 }, (_, i) =>
        rpcLog(100 + Math.floor(i / 100), i % 100),
      );
      const large = new Uint8Array(new TextEncoder().encode(bodyOf(logs)));
      expect(large.byteLength).toBeGreaterThanOrEqual(DECODE_THREAD_MIN_ANSWER_BYTES);
      const decoded = await decoder.decode(answer(large));
      // Moved to the decode thread: detached here.
      expect(large.byteLength).toBe(0);
      expect(decoded).toMatchObject({ kind: "rows", rows: { count: 600 } });
    } finally {
      await decoder.close();
    }
  });

  test.runIf(process.platform === "linux")(
    "beside live work the decode thread runs at a lower CPU priority; the rest of the process does not",
    async () => {
      for (const mode of ["batch", "daemon"] as const) {
        const decoder = createWindowDecoder({ threadAfterLogs: 0, mode });
        try {
          expect(threadNices().filter((nice) => nice !== 0)).toEqual([]);
          await decoder.decode(answer(bodyOf([rpcLog(100, 0)])));
          // The first answer starts the thread; the second is decoded there, after it set its priority.
          expect(await decoder.decode(answer(bodyOf([rpcLog(100, 0)])))).toMatchObject({
            kind: "rows",
          });
          expect(threadNices().filter((nice) => nice !== 0)).toEqual(
            mode === "daemon" ? [DECODE_THREAD_NICE_IN_DAEMON] : [],
          );
        } finally {
          await decoder.close();
        }
      }
    },
  );
});
