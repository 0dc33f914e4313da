import { describe, expect, test } from "vitest";
import { unpackStrings } from "../../src/rows/packedRows.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  PAYMENT_TOPICS,
  TRANSFER_TOPIC,
} from "../../src/rows/paymentEvents.js";
import { scanWindowAnswer } from "../../src/decode/scanWindowAnswer.js";
import {
  decodeParsedWindowAnswer,
  decodeWindowAnswer,
} from "../../src/sync/historical/windowAnswer.js";
import type { DecodedWindow, WindowAnswer } from "../../src/decode/decodedWindow.js";
import { word } from "../helpers/fixtures.js";

const TOKENS = [
  "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
  "0x00000000000000000000000000000000000f1a54",
] as const;
const filter = { from: 1_000, to: 1_019, addresses: [...TOKENS], topic0: [...PAYMENT_TOPICS] };
const TOPICS = [TRANSFER_TOPIC, AUTHORIZATION_USED_TOPIC, AUTHORIZATION_CANCELED_TOPIC];

/** A small deterministic generator (mulberry32), so a failure names a seed that reproduces it. */
function random(seed: number) {
  let state = seed;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (below: number) => Math.floor(next() * below);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const hex = (digits: number) =>
    Array.from({ length: digits }, () => "0123456789abcdef"[int(16)]).join("");
  return { next, int, pick, hex };
}

/** Values at the edges of the decimal conversion (base 10^9 chunks, 16-bit limbs, 2^53, 2^256 − 1). */
const EDGE_VALUES = [
  0n,
  1n,
  9n,
  10n,
  999_999_999n,
  1_000_000_000n,
  10n ** 18n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 64n,
  10n ** 27n - 1n,
  2n ** 255n,
  2n ** 256n - 1n,
];

/** An answer as a node might send it: any key order, blank space, mixed case, `removed` or not. */
function plainWindow(seed: number): { body: string; finalized: number } {
  const r = random(seed);
  const shout = (hex: string) => (r.next() < 0.2 ? `0x${hex.slice(2).toUpperCase()}` : hex);
  const logs: Array<Record<string, unknown>> = [];
  let block = filter.from + r.int(3);
  for (let b = 0; b < 1 + r.int(4) && block <= filter.to; b++, block += 1 + r.int(3)) {
    const blockHash = word(r.hex(64));
    let logIndex = r.int(3);
    for (let t = 0; t < 1 + r.int(3); t++) {
      const tx = word(r.hex(64));
      for (let l = 0; l < 1 + r.int(4); l++, logIndex += 1 + r.int(2)) {
        const topic0 = r.pick(TOPICS);
        const value = r.next() < 0.5 ? r.pick(EDGE_VALUES) : BigInt(`0x${r.hex(1 + r.int(64))}`);
        const log: Record<string, unknown> = {
          address: shout(r.pick(TOKENS)),
          topics: [
            topic0,
            word(r.hex(40)),
            topic0 === TRANSFER_TOPIC ? word(r.hex(40)) : word(r.hex(64)),
          ].map(shout),
          data: topic0 === TRANSFER_TOPIC ? shout(word(value.toString(16))) : "0x",
          blockNumber: `0x${block.toString(16)}`,
          blockHash: shout(blockHash),
          blockTimestamp: `0x${(1_700_000_000 + block * 2).toString(16)}`,
          transactionHash: shout(tx),
          transactionIndex: `0x${t.toString(16)}`,
          logIndex: `0x${logIndex.toString(16)}`,
        };
        if (r.next() < 0.7) log.removed = false;
        logs.push(Object.fromEntries(Object.entries(log).sort(() => r.next() - 0.5)));
      }
    }
  }
  const space = () => r.pick(["", "", " ", "\n  ", "\t"]);
  const json = JSON.stringify(
    r.next() < 0.5
      ? { jsonrpc: "2.0", id: 7, result: logs }
      : { result: logs, id: 7, jsonrpc: "2.0" },
    null,
    r.next() < 0.3 ? 1 : 0,
  );
  // Blank space between tokens, never inside strings (a string holds no `,` or `:` here).
  return {
    body: json.replace(/([,:[\]{}])/g, (token) => `${space()}${token}${space()}`),
    finalized: filter.from + r.int(20),
  };
}

const answer = (body: string | Uint8Array, finalized = 1_010): WindowAnswer => ({
  body: typeof body === "string" ? new TextEncoder().encode(body) : body,
  id: 7,
  endpoint: "http://node.test",
  filter,
  chainId: 8453,
  finalized,
});

/** What a decoded window stores, as plain data to compare. */
function stored(decoded: DecodedWindow | undefined) {
  if (decoded?.kind !== "rows") return decoded;
  return {
    strings: unpackStrings(decoded.rows),
    numbers: [...decoded.rows.numbers],
    txHashes: decoded.txHashes,
    blocks: decoded.blocks,
    untimed: decoded.untimed,
    rejected: decoded.rejected,
  };
}

describe("scanWindowAnswer()", () => {
  test("stores exactly the rows of the full path, over 400 generated answers", () => {
    let logs = 0;
    for (let seed = 1; seed <= 400; seed++) {
      const { body, finalized } = plainWindow(seed);
      const scanned = scanWindowAnswer(answer(body, finalized));
      expect(scanned, `seed ${seed} left the plain case:\n${body.slice(0, 500)}`).toBeDefined();
      expect(stored(scanned), `seed ${seed}`).toEqual(
        stored(decodeParsedWindowAnswer(answer(body, finalized))),
      );
      logs += scanned!.rows.count;
    }
    expect(logs).toBeGreaterThan(2_000);
  });

  test("a damaged answer is never taken differently: over 3,000 mutated answers the scan gives up or stores exactly the full path's rows", () => {
    const r = random(99);
    const alphabet = ' ",:[]{}0123456789abcdefABCDEFxXtrue\\\n';
    let scanned = 0;
    for (let i = 0; i < 3_000; i++) {
      let body = plainWindow(1 + (i % 50)).body;
      for (let m = 0; m < 1 + r.int(3); m++) {
        const at = r.int(body.length);
        const kind = r.int(3);
        if (kind === 0) body = body.slice(0, at) + r.pick([...alphabet]) + body.slice(at + 1);
        else if (kind === 1) body = body.slice(0, at) + body.slice(at + 1 + r.int(4));
        else
          body =
            body.slice(0, at) +
            body.slice(r.int(body.length)).slice(0, 1 + r.int(40)) +
            body.slice(at);
      }
      const result = scanWindowAnswer(answer(body));
      if (result === undefined) continue;
      scanned++;
      expect(stored(result), `mutation ${i}:\n${body.slice(0, 300)}`).toEqual(
        stored(decodeParsedWindowAnswer(answer(body))),
      );
    }
    // Some mutations leave the answer plain (a changed hex digit): those are compared too.
    expect(scanned).toBeGreaterThan(50);
  });

  test("an answer cut short at any byte is given up, never read past its end", () => {
    // Short of its closing brace (what follows it is blank space).
    const body = plainWindow(2).body.trimEnd();
    for (let length = 0; length < body.length; length++)
      expect(scanWindowAnswer(answer(body.slice(0, length))), `cut at ${length}`).toBeUndefined();
  });

  test("an empty result is zero rows, as on the full path", () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 7, result: [] });
    expect(stored(scanWindowAnswer(answer(body)))).toEqual(
      stored(decodeParsedWindowAnswer(answer(body))),
    );
    expect(scanWindowAnswer(answer(body))!.rows.count).toBe(0);
  });

  test("the packed text moves on its own: a buffer of exactly its bytes, never the scan's scratch", () => {
    const first = scanWindowAnswer(answer(plainWindow(1).body))!;
    const text = first.rows.text as Uint8Array;
    const copy = Uint8Array.from(text);
    scanWindowAnswer(answer(plainWindow(2).body));
    expect(text.byteLength).toBe(text.buffer.byteLength);
    expect(text).toEqual(copy);
  });

  test("an outsized answer (past the kept scratch buffer) is scanned into a buffer of its own, to the same rows", () => {
    const template = (JSON.parse(plainWindow(5).body) as { result: Array<Record<string, unknown>> })
      .result[0]!;
    const result: Array<Record<string, unknown>> = Array.from({ length: 12_000 }, (_, i) => ({
      ...template,
      blockNumber: `0x${(filter.from + Math.floor(i / 1_000)).toString(16)}`,
      logIndex: `0x${(i % 1_000).toString(16)}`,
    }));
    // One hash per block, as a node sends them.
    for (const log of result)
      log.blockHash = `0x${(log.blockNumber as string).slice(2).padStart(64, "0")}`;
    const body = JSON.stringify({ jsonrpc: "2.0", id: 7, result });
    expect(body.length).toBeGreaterThan((8 * 1024 * 1024) / 1.7);
    const scanned = scanWindowAnswer(answer(body));
    expect(scanned?.rows.count).toBe(12_000);
    expect(stored(scanned)).toEqual(stored(decodeParsedWindowAnswer(answer(body))));
  });

  // Each leaves the plain case: the scan gives up and decodeWindowAnswer answers as the full path does
  // (a damaged answer, a node's error, rejected logs, blocks without timestamps).
  const onePlain = () =>
    JSON.parse(plainWindow(3).body) as { result: Array<Record<string, unknown>> };
  const withFirstLog = (change: (log: Record<string, unknown>) => void) => {
    const parsed = onePlain();
    change(parsed.result[0]!);
    return JSON.stringify(parsed);
  };
  const cases: Array<[string, string]> = [
    [
      "a node's error",
      JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        error: { code: -32005, message: "query returned more than 10000 results" },
      }),
    ],
    ["another request's id", JSON.stringify({ ...onePlain(), id: 8 })],
    ["an id as a string", JSON.stringify({ ...onePlain(), id: "7" })],
    ["no result", JSON.stringify({ jsonrpc: "2.0", id: 7 })],
    ["a result that is not an array", JSON.stringify({ jsonrpc: "2.0", id: 7, result: null })],
    ["bad JSON", JSON.stringify(onePlain()).slice(0, -2)],
    ["trailing bytes", `${JSON.stringify(onePlain())}x`],
    [
      "an escape in a string",
      JSON.stringify(onePlain()).replace('"jsonrpc":"2.0"', '"jsonrpc":"2\\u002e0"'),
    ],
    ["an unknown key", withFirstLog((log) => (log.transactionLogIndex = "0x0"))],
    ["a key twice", JSON.stringify(onePlain()).replace('"data":', '"data":"0x","data":')],
    ["no blockTimestamp", withFirstLog((log) => delete log.blockTimestamp)],
    ["a null blockTimestamp", withFirstLog((log) => (log.blockTimestamp = null))],
    ["removed: true", withFirstLog((log) => (log.removed = true))],
    ["removed: null", withFirstLog((log) => (log.removed = null))],
    ["a block outside the range", withFirstLog((log) => (log.blockNumber = "0x1"))],
    [
      "an address not asked for",
      withFirstLog((log) => (log.address = "0x00000000000000000000000000000000000000aa")),
    ],
    [
      "a topic not asked for",
      withFirstLog((log) => ((log.topics as string[])[0] = `0x${"ab".repeat(32)}`)),
    ],
    ["two topics", withFirstLog((log) => (log.topics as string[]).pop())],
    [
      "five topics",
      withFirstLog((log) => (log.topics as string[]).push(...(log.topics as string[]))),
    ],
    ["data of the wrong length", withFirstLog((log) => (log.data = "0x00"))],
    ["data of odd length", withFirstLog((log) => (log.data = "0x0"))],
    [
      "a dirty address word",
      withFirstLog((log) => ((log.topics as string[])[1] = `0x${"1".repeat(64)}`)),
    ],
    [
      "a quantity of 14 digits",
      withFirstLog((log) => (log.blockTimestamp = `0x${"1".repeat(14)}`)),
    ],
    ["an empty quantity", withFirstLog((log) => (log.logIndex = "0x"))],
    ["a quantity as a number", withFirstLog((log) => (log.logIndex = 0))],
    [
      "a hash that is not hex",
      withFirstLog((log) => (log.transactionHash = `0x${"g".repeat(64)}`)),
    ],
    ["a short hash", withFirstLog((log) => (log.blockHash = `0x${"1".repeat(62)}`))],
    [
      "0X for 0x",
      withFirstLog((log) => (log.address = (log.address as string).replace("0x", "0X"))),
    ],
    ["a log that is not an object", JSON.stringify({ ...onePlain(), result: [1] })],
    [
      "logs out of order",
      JSON.stringify({ ...onePlain(), result: [...onePlain().result].reverse() }),
    ],
    [
      "two hashes for one block",
      JSON.stringify({
        ...onePlain(),
        result: [
          ...onePlain().result,
          { ...onePlain().result.at(-1)!, logIndex: "0xfff", blockHash: `0x${"9".repeat(64)}` },
        ],
      }),
    ],
  ];
  test.each(cases)("gives up on %s, and decodeWindowAnswer answers as the full path", (_, body) => {
    expect(scanWindowAnswer(answer(body))).toBeUndefined();
    expect(stored(decodeWindowAnswer(answer(body)))).toEqual(
      stored(decodeParsedWindowAnswer(answer(body))),
    );
  });

  test("a body given as text goes to the full path", () => {
    const body = plainWindow(4).body;
    expect(scanWindowAnswer({ ...answer(body), body })).toBeUndefined();
  });
});
