import { Attribution as OxAttribution } from "ox/erc8021";
import type { Hex } from "viem";
import { describe, expect, test } from "vitest";
import { attributeTransaction } from "../../../src/decode/attributeTransaction.js";
import {
  attributeTransactionsAnswer,
  calldataRequest,
  type TransactionsAnswer,
} from "../../../src/sync/historical/transactionsAnswer.js";
import { TRANSFER_TOPIC } from "../../../src/rows/paymentEvents.js";
import { createWindowDecoder } from "../../../src/sync/historical/windowDecoder.js";
import { RpcRequestError } from "../../../src/errors/rpc.js";
import { batchResults } from "../../../src/chain/jsonRpcAnswer.js";
import { unpackAttribution } from "../../../src/rows/packedAttribution.js";
import { packAttribution } from "../../../src/decode/packAttribution.js";
import { word } from "../../helpers/fixtures.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const TRANSFER_CALL = `0xa9059cbb${"0".repeat(24)}${"c0de".padStart(40, "0")}${"64".padStart(64, "0")}`;
const HASHES = [word("a1"), word("b2"), word("c3")];
/** What the node knows of each: the first with a schema 0 code, in upper case; the second is a contract creation; the third unknown. */
const TRANSACTIONS: Array<Record<string, unknown> | null> = [
  {
    hash: word("A1"),
    from: "0x00000000000000000000000000000000000B0E01",
    to: TOKEN,
    input: `${TRANSFER_CALL}${OxAttribution.toDataSuffix({ codes: ["bc_b8nos5a8"] }).slice(2)}`,
    nonce: "0x1",
    gas: "0x5208",
    accessList: [{ address: TOKEN, storageKeys: [word("1")] }],
    r: "0x1",
    s: "0x2",
  },
  {
    hash: HASHES[1],
    from: "0x00000000000000000000000000000000000b0e01",
    to: null,
    input: "0x6080",
  },
  null,
];
const FIRST_ID = 40;

function answerOf(items: unknown, hashes: readonly Hex[] = HASHES): TransactionsAnswer {
  return {
    body: Buffer.from(typeof items === "string" ? items : JSON.stringify(items)),
    firstId: FIRST_ID,
    endpoint: "http://node",
    calls: hashes.map((hash) => ({ hash })),
    chainId: 8453,
    now: 7,
  };
}
const results = (transactions: ReadonlyArray<unknown>) =>
  transactions.map((result, i) => ({ jsonrpc: "2.0", id: FIRST_ID + i, result }));

describe("a batch of eth_getTransactionByHash answers, attributed off the main thread", () => {
  test("packs what the row by row path packs: checked, in lower case, a transaction the node does not know left out", () => {
    // The answers in another order than asked: matched by id.
    const attributed = attributeTransactionsAnswer(answerOf(results(TRANSACTIONS).reverse()));
    const expected = [
      {
        hash: HASHES[0]!,
        from: "0x00000000000000000000000000000000000b0e01" as Hex,
        to: TOKEN as Hex,
        input: (TRANSACTIONS[0]!.input as string).toLowerCase() as Hex,
      },
      {
        hash: HASHES[1]!,
        from: "0x00000000000000000000000000000000000b0e01" as Hex,
        to: null,
        input: "0x6080" as Hex,
      },
    ].map((tx) => ({ chainId: 8453, tx, attribution: attributeTransaction(tx) }));
    expect(attributed).toEqual({
      kind: "attributed",
      attribution: packAttribution(expected, 7),
      tallies: [
        { result: "codes", schema: "0", count: 1 },
        { result: "none", schema: "none", count: 1 },
      ],
      bundles: [],
    });
  });

  test("a node's error comes back as the error the RPC client would have thrown, for the batch or for one call", () => {
    const direct = (items: unknown) => {
      try {
        batchResults(
          items,
          HASHES.map(() => "eth_getTransactionByHash"),
          FIRST_ID,
          "http://node",
        ).forEach((r) => {
          if (!r.ok) throw r.error;
        });
      } catch (error) {
        return (error as RpcRequestError).shortMessage;
      }
      return undefined;
    };
    const rebuilt = (items: unknown) => {
      const result = attributeTransactionsAnswer(answerOf(items));
      if (result.kind !== "nodeError") throw new Error(`expected a node error, got ${result.kind}`);
      return new RpcRequestError(result.method, result.error).shortMessage;
    };
    const whole = { jsonrpc: "2.0", id: null, error: { code: -32005, message: "batch too large" } };
    const oneCall = results(TRANSACTIONS).map((item, i) =>
      i === 1
        ? {
            jsonrpc: "2.0",
            id: item.id,
            error: { code: -32602, message: "invalid argument 0", data: "x" },
          }
        : item,
    );
    expect(rebuilt(whole)).toBe("batch failed: batch too large (code -32005)");
    expect(rebuilt(whole)).toBe(direct(whole));
    expect(rebuilt(oneCall)).toBe(
      "eth_getTransactionByHash failed: invalid argument 0 (code -32602)",
    );
    expect(rebuilt(oneCall)).toBe(direct(oneCall));
  });

  test("a damaged answer is refused with what is wrong (the client asks again)", () => {
    const damaged = (items: unknown) => {
      const result = attributeTransactionsAnswer(answerOf(items));
      return result.kind === "damaged" ? result.message : result.kind;
    };
    expect(damaged("[{")).toBe("http://node answered with invalid JSON");
    expect(damaged(results(TRANSACTIONS).slice(0, 2))).toBe(
      "http://node left call 2 (eth_getTransactionByHash) of a batch unanswered",
    );
    expect(damaged({ jsonrpc: "2.0", id: FIRST_ID, result: [] })).toBe(
      "http://node answered a batch with a non-array",
    );
    const other = results([{ ...TRANSACTIONS[1], hash: word("d4") }, TRANSACTIONS[1], null]);
    expect(damaged(other)).toBe(
      `eth_getTransactionByHash(${HASHES[0]}) answered transaction ${word("d4")}`,
    );
    const malformed = results([
      { ...TRANSACTIONS[1], hash: HASHES[0], input: "0x123" },
      TRANSACTIONS[1],
      null,
    ]);
    expect(damaged(malformed)).toBe(`eth_getTransactionByHash(${HASHES[0]}).input is malformed`);
  });

  test("the decode thread attributes a batch as this thread does, its bytes moved to it", async () => {
    const decoder = createWindowDecoder({ threadAfterLogs: 0 });
    try {
      const inline = await decoder.attribute(answerOf(results(TRANSACTIONS)));
      // The first window's logs start the thread (threadAfterLogs 0).
      await decoder.decode({
        body: '{"jsonrpc":"2.0","id":1,"result":[]}',
        id: 1,
        endpoint: "http://node",
        filter: { from: 1, to: 2, addresses: [TOKEN], topic0: [TRANSFER_TOPIC] },
        chainId: 8453,
        finalized: 0,
      });
      const body = new Uint8Array(Buffer.from(JSON.stringify(results(TRANSACTIONS))));
      const threaded = await decoder.attribute({ ...answerOf([]), body });
      expect(body.byteLength).toBe(0);
      expect(inline).toMatchObject({ kind: "attributed", tallies: [{ count: 1 }, { count: 1 }] });
      if (threaded.kind !== "attributed" || inline.kind !== "attributed")
        throw new Error("not attributed");
      // Its attribution came back as JSON bytes (moved, not cloned value by value), holding the same rows.
      expect(threaded.attribution.batches.every((batch) => batch instanceof Uint8Array)).toBe(true);
      expect(unpackAttribution(threaded.attribution)).toEqual(
        unpackAttribution(inline.attribution),
      );
      expect(threaded.tallies).toEqual(inline.tallies);
    } finally {
      await decoder.close();
    }
  });
});

describe("a whole block asked for its wanted transactions (eth_getBlockByNumber(n, true))", () => {
  const BLOCK = 0x1234;
  const BLOCK_HASH = word("b10c");
  /** Block 0x1234 holding the two known transactions among two that move no token. */
  const OTHER = {
    hash: word("e1"),
    from: "0x00000000000000000000000000000000000000e1",
    to: null,
    input: "0x60",
  };
  const block = (changes: Record<string, unknown> = {}) => ({
    number: "0x1234",
    hash: BLOCK_HASH.toUpperCase().replace("0X", "0x"),
    transactions: [OTHER, TRANSACTIONS[1], { ...OTHER, hash: word("e2") }, TRANSACTIONS[0]],
    ...changes,
  });
  const blockCall = { block: BLOCK, blockHash: BLOCK_HASH, hashes: [HASHES[0]!, HASHES[1]!] };
  const mixedAnswer = (blockResult: unknown): TransactionsAnswer => ({
    body: Buffer.from(JSON.stringify(results([blockResult, TRANSACTIONS[1]]))),
    firstId: FIRST_ID,
    endpoint: "http://node",
    calls: [blockCall, { hash: HASHES[1]! }],
    chainId: 8453,
    now: 7,
  });
  const damaged = (blockResult: unknown) => {
    const result = attributeTransactionsAnswer(mixedAnswer(blockResult));
    return result.kind === "damaged" ? result.message : result.kind;
  };

  test("takes only the wanted transactions, checked as by hash, beside calls by hash in the same batch", () => {
    const attributed = attributeTransactionsAnswer(mixedAnswer(block()));
    const byHash = attributeTransactionsAnswer(
      answerOf(results([TRANSACTIONS[1], TRANSACTIONS[0], TRANSACTIONS[1]]), [
        HASHES[1]!,
        HASHES[0]!,
        HASHES[1]!,
      ]),
    );
    if (attributed.kind !== "attributed" || byHash.kind !== "attributed")
      throw new Error("not attributed");
    expect(unpackAttribution(attributed.attribution)).toEqual(
      unpackAttribution(byHash.attribution),
    );
    expect(attributed.tallies).toEqual(byHash.tallies);
  });

  test("a block other than the logs' (number or hash), or one lacking a wanted transaction, is damaged: asked again", () => {
    expect(damaged(block({ hash: word("bad") }))).toBe(
      `eth_getBlockByNumber(${BLOCK}) answered block hash ${word("bad")}, its logs carried ${BLOCK_HASH}`,
    );
    expect(damaged(block({ number: "0x1235" }))).toBe(
      `eth_getBlockByNumber(${BLOCK}) answered block 0x1235`,
    );
    expect(damaged(block({ transactions: [OTHER, TRANSACTIONS[0]] }))).toBe(
      `eth_getBlockByNumber(${BLOCK}) lacks transaction ${HASHES[1]}, which its logs name`,
    );
    // Hashes only (a node that ignored the `true`): the wanted transactions are not there.
    expect(damaged(block({ transactions: [HASHES[0], HASHES[1]] }))).toBe(
      `eth_getBlockByNumber(${BLOCK}) lacks transaction ${HASHES[0]}, which its logs name`,
    );
    expect(damaged(null)).toBe(`eth_getBlockByNumber(${BLOCK}) answered no block`);
    expect(damaged({ number: "0x1234", hash: BLOCK_HASH })).toBe(
      `eth_getBlockByNumber(${BLOCK}) is not a block with its transactions`,
    );
    const malformed = block({
      transactions: [{ ...TRANSACTIONS[0], input: "0x1" }, TRANSACTIONS[1]],
    });
    expect(damaged(malformed)).toBe(
      `eth_getBlockByNumber(${BLOCK}).transactions[0].input is malformed`,
    );
  });

  test("the calls are sent as eth_getBlockByNumber(hex number, true) and eth_getTransactionByHash(hash)", () => {
    expect(calldataRequest(blockCall)).toEqual({
      method: "eth_getBlockByNumber",
      params: ["0x1234", true],
    });
    expect(calldataRequest({ hash: HASHES[0]! })).toEqual({
      method: "eth_getTransactionByHash",
      params: [HASHES[0]],
    });
  });
});
