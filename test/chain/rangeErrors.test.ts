import { describe, expect, test } from "vitest";
import {
  MAX_PIECES_PER_SPLIT,
  parseRangeError,
  splitAfterRangeError,
  type RangeErrorHint,
} from "../../src/chain/rangeErrors.js";

/** The rpc client hands over its own short message, which wraps the node's text like this. */
const wrapped = (message: string, code: number) => `eth_getLogs failed: ${message} (code ${code})`;

describe("parseRangeError() on real provider answers", () => {
  test("Alchemy's 2K block range message yields a 2,000-block limit", () => {
    const message =
      "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response.";
    expect(parseRangeError({ code: -32602, message })).toEqual({ kind: "maxRange", blocks: 2000n });
  });

  test("Alchemy's suggested block range wins over its stated limit", () => {
    const message =
      "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters and the response size limit, this block range should work: [0xc5dc00, 0xc614a7]";
    expect(parseRangeError({ code: -32602, message })).toEqual({
      kind: "suggestedRange",
      from: 0xc5dc00n,
      to: 0xc614a7n,
    });
  });

  test("Alchemy's free-tier message yields its suggested range", () => {
    const message =
      "Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range. Based on your parameters, this block range should work: [0x1180fca, 0x1180fd3]. Upgrade to PAYG for expanded block range.";
    expect(parseRangeError({ code: -32600, message })).toEqual({
      kind: "suggestedRange",
      from: 0x1180fcan,
      to: 0x1180fd3n,
    });
  });

  test("Alchemy's query timeout with a suggestion yields the suggested range", () => {
    const message =
      "Query timeout exceeded. Consider reducing your block range. Based on your parameters and the response size limit, this block range should work: [0x5223c98, 0x5223e80]";
    expect(parseRangeError({ code: -32000, message })).toEqual({
      kind: "suggestedRange",
      from: 0x5223c98n,
      to: 0x5223e80n,
    });
  });

  test("Alchemy's bare response-size and timeout messages are recognised without a number", () => {
    expect(
      parseRangeError({ message: "Log response size exceeded. Please reduce query block range." }),
    ).toEqual({ kind: "tooLarge" });
    expect(
      parseRangeError({ message: "Query timeout exceeded. Consider reducing your block range." }),
    ).toEqual({ kind: "tooLarge" });
  });

  test("Infura's result limit yields the block range it proposes", () => {
    const message =
      "query returned more than 10000 results. Try with this block range [0xBDE5F8, 0x102DBCC].";
    expect(parseRangeError({ code: -32005, message })).toEqual({
      kind: "suggestedRange",
      from: 0xbde5f8n,
      to: 0x102dbccn,
    });
  });

  test("Infura's structured data is read when the message carries no range", () => {
    const error = {
      code: -32005,
      message: "query returned more than 10000 results",
      data: { from: "0xBDE5F8", limit: 10000, to: "0x102DBCC" },
    };
    expect(parseRangeError(error)).toEqual({
      kind: "suggestedRange",
      from: 0xbde5f8n,
      to: 0x102dbccn,
    });
  });

  test("a request echoed back in data is not mistaken for a suggestion", () => {
    const error = {
      code: -32005,
      message: "query returned more than 10000 results",
      data: {
        host: "localhost:8545",
        request_body: { params: [{ fromBlock: "0x1", toBlock: "0x100" }] },
        from: "0x1",
        to: "0x100",
      },
    };
    expect(parseRangeError(error)).toEqual({ kind: "maxResults", results: 10000 });
  });

  test("Infura's block-range refusal yields its 10,000-block limit", () => {
    expect(
      parseRangeError({ code: -32602, message: "range 1000000 exceeds limit of 10000" }),
    ).toEqual({ kind: "maxRange", blocks: 10000n });
  });

  test("Infura's max range limit as users quote it yields its limit", () => {
    expect(
      parseRangeError({ code: -32005, message: "Exceeded max range limit for eth_getLogs: 1000" }),
    ).toEqual({ kind: "maxRange", blocks: 1000n });
    expect(parseRangeError({ code: -32005, message: "exceeded max range" })).toEqual({
      kind: "tooLarge",
    });
  });

  test("geth and op-geth's range limit yields the stated block count", () => {
    expect(parseRangeError({ code: -32000, message: "exceed maximum block range: 10000" })).toEqual(
      { kind: "maxRange", blocks: 10000n },
    );
  });

  test("geth and op-geth's result limit yields a result count", () => {
    expect(
      parseRangeError({ code: -32005, message: "query returned more than 10000 results" }),
    ).toEqual({ kind: "maxResults", results: 10000 });
  });

  test("reth and op-reth's range limit yields the stated block count", () => {
    expect(
      parseRangeError({ code: -32602, message: "query exceeds max block range 1000" }),
    ).toEqual({ kind: "maxRange", blocks: 1000n });
  });

  test("reth and op-reth's result limit yields the decimal range it proposes", () => {
    expect(
      parseRangeError({
        code: -32602,
        message: "query exceeds max results 20000, retry with the range 1-300",
      }),
    ).toEqual({
      kind: "suggestedRange",
      from: 1n,
      to: 300n,
    });
    const drpc =
      "request exceeded max allowed range: query exceeds max results 20000, retry with the range 50784086-50785570";
    expect(parseRangeError({ code: -32602, message: drpc })).toEqual({
      kind: "suggestedRange",
      from: 50784086n,
      to: 50785570n,
    });
  });

  test("reth's proposal running backwards is ignored in favour of its result limit", () => {
    expect(
      parseRangeError({ message: "query exceeds max results 20000, retry with the range 500-100" }),
    ).toEqual({
      kind: "maxResults",
      results: 20000,
    });
  });

  test("QuickNode's two range messages yield a 10,000-block limit", () => {
    expect(
      parseRangeError({ code: -32614, message: "eth_getLogs is limited to a 10,000 range" }),
    ).toEqual({ kind: "maxRange", blocks: 10000n });
    expect(
      parseRangeError({
        code: -32602,
        message: "eth_getLogs and eth_newFilter are limited to a 10,000 blocks range",
      }),
    ).toEqual({
      kind: "maxRange",
      blocks: 10000n,
    });
  });

  test("BlockPI and 1RPC's limited-to phrasings yield their block counts", () => {
    expect(parseRangeError({ message: "limited to 1000" })).toEqual({
      kind: "maxRange",
      blocks: 1000n,
    });
    expect(parseRangeError({ message: "eth_getLogs is limited to 1000 block range" })).toEqual({
      kind: "maxRange",
      blocks: 1000n,
    });
    expect(
      parseRangeError({ code: -32602, message: "eth_getLogs is limited to 0 - 50 blocks range" }),
    ).toEqual({ kind: "maxRange", blocks: 50n });
  });

  test("Ankr's too-wide range is recognised without a number", () => {
    expect(parseRangeError({ code: -32600, message: "block range is too wide" })).toEqual({
      kind: "tooLarge",
    });
  });

  test("the Base public endpoint's range and size refusals are recognised", () => {
    expect(parseRangeError({ code: -32000, message: "block range too large" })).toEqual({
      kind: "tooLarge",
    });
    expect(parseRangeError({ code: -32020, message: "backend response too large" })).toEqual({
      kind: "tooLarge",
    });
  });

  test("Optimism's capitalised too-large range is recognised", () => {
    expect(parseRangeError({ message: "Block range is too large" })).toEqual({ kind: "tooLarge" });
  });

  test("Cloudflare's max range yields the stated block count", () => {
    const message =
      "Invalid eth_getLogs request. 'fromBlock'-'toBlock' range too large. Max range: 3500";
    expect(parseRangeError({ code: -32047, message })).toEqual({ kind: "maxRange", blocks: 3500n });
  });

  test("Chainstack's range limit is recognised without a number", () => {
    expect(parseRangeError({ message: "Block range limit exceeded." })).toEqual({
      kind: "tooLarge",
    });
    expect(parseRangeError({ message: "range limit exceeded" })).toEqual({ kind: "tooLarge" });
  });

  test("1RPC's byte cap is recognised as too large, not read as a result count", () => {
    expect(
      parseRangeError({
        code: -32000,
        message: "response size should not greater than 10000000 bytes",
      }),
    ).toEqual({ kind: "tooLarge" });
  });

  test("DRPC's free-plan range yields its block count", () => {
    expect(
      parseRangeError({
        code: 35,
        message: "ranges over 10000 blocks are not supported on free plan",
      }),
    ).toEqual({
      kind: "maxRange",
      blocks: 10000n,
    });
  });

  test("Avalanche's too-many-blocks message yields its maximum, not the requested span", () => {
    const message = "requested too many blocks from 0 to 27842567, maximum is set to 2048";
    expect(parseRangeError({ code: -32000, message })).toEqual({ kind: "maxRange", blocks: 2048n });
  });

  test("Arbitrum's matched-logs limit yields a result count", () => {
    expect(parseRangeError({ message: "logs matched by query exceeds limit of 10000" })).toEqual({
      kind: "maxResults",
      results: 10000,
    });
  });

  test("BlastAPI's paid-plan range yields the allowed block count", () => {
    expect(
      parseRangeError({ message: "exceeds the range allowed for your plan (5000 > 3000)" }),
    ).toEqual({ kind: "maxRange", blocks: 3000n });
  });

  test("Coinbase's at-most limit on Base yields its block count", () => {
    expect(parseRangeError({ message: "please limit the query to at most 1000 blocks" })).toEqual({
      kind: "maxRange",
      blocks: 1000n,
    });
  });

  test("Nodies' and Sei's maximum-allowed phrasings yield their block counts", () => {
    const nodies =
      "Block range too large: maximum allowed is 50 blocks on your current plan. Upgrade your subscription at https://nodies.app for larger ranges.";
    expect(parseRangeError({ code: -32001, message: nodies })).toEqual({
      kind: "maxRange",
      blocks: 50n,
    });
    expect(parseRangeError({ message: "block range too large, max 250" })).toEqual({
      kind: "maxRange",
      blocks: 250n,
    });
    expect(
      parseRangeError({ message: "block range too large (2000), maximum allowed is 1000 blocks" }),
    ).toEqual({ kind: "maxRange", blocks: 1000n });
  });

  test("Moonbeam's too-wide range yields its stated maximum", () => {
    expect(parseRangeError({ message: "block range is too wide (maximum 1024)" })).toEqual({
      kind: "maxRange",
      blocks: 1024n,
    });
  });

  test("thirdweb's requested-blocks maximum yields its block count", () => {
    expect(
      parseRangeError({ message: "Maximum allowed number of requested blocks is 3500" }),
    ).toEqual({ kind: "maxRange", blocks: 3500n });
  });

  test("Tenderly's limit nested in data.payload behind 'invalid params' is read", () => {
    const error = {
      code: -32602,
      message: "invalid params",
      data: { error_id: "4ed94073", payload: "range 9009594 is bigger than range limit 2000" },
    };
    expect(parseRangeError(error)).toEqual({ kind: "maxRange", blocks: 2000n });
  });
});

describe("parseRangeError() on where and how the text is written", () => {
  test("a message inside data as a string is read", () => {
    const error = {
      code: -32602,
      message: "invalid params",
      data: "Query returned more than 10000 results. Try with this block range [0x800000, 0x800054].",
    };
    expect(parseRangeError(error)).toEqual({
      kind: "suggestedRange",
      from: 0x800000n,
      to: 0x800054n,
    });
  });

  test("a message inside data.message is read", () => {
    const error = {
      code: -32000,
      message: "server error",
      data: { message: "exceed maximum block range: 5000" },
    };
    expect(parseRangeError(error)).toEqual({ kind: "maxRange", blocks: 5000n });
  });

  test("case does not matter", () => {
    expect(parseRangeError({ message: "EXCEED MAXIMUM BLOCK RANGE: 10000" })).toEqual({
      kind: "maxRange",
      blocks: 10000n,
    });
    expect(parseRangeError({ message: "QUERY RETURNED MORE THAN 10000 RESULTS" })).toEqual({
      kind: "maxResults",
      results: 10000,
    });
  });

  test("numbers with commas, hex, and a K suffix are read as block counts", () => {
    expect(parseRangeError({ message: "exceed maximum block range: 10,000" })).toEqual({
      kind: "maxRange",
      blocks: 10000n,
    });
    expect(parseRangeError({ message: "exceed maximum block range: 0x2710" })).toEqual({
      kind: "maxRange",
      blocks: 10000n,
    });
    expect(parseRangeError({ message: "up to a 2K block range" })).toEqual({
      kind: "maxRange",
      blocks: 2000n,
    });
    expect(parseRangeError({ message: "up to a 1.5k block range" })).toEqual({
      kind: "maxRange",
      blocks: 1500n,
    });
    expect(parseRangeError({ message: "query returned more than 10,000 results" })).toEqual({
      kind: "maxResults",
      results: 10000,
    });
  });

  test("the rpc client's wrapped message is read the same as the bare one", () => {
    expect(
      parseRangeError({
        code: -32614,
        message: wrapped("eth_getLogs is limited to a 10,000 range", -32614),
      }),
    ).toEqual({
      kind: "maxRange",
      blocks: 10000n,
    });
    expect(parseRangeError({ code: -32000, message: wrapped("limited to 1000", -32000) })).toEqual({
      kind: "maxRange",
      blocks: 1000n,
    });
  });

  test("a stated limit of zero is not believed but the refusal is still recognised", () => {
    expect(parseRangeError({ message: "block range too large, max 0" })).toEqual({
      kind: "tooLarge",
    });
  });
});

describe("parseRangeError() on errors that are not range refusals", () => {
  const others: Array<[string, { code?: number; message: string; data?: unknown }]> = [
    [
      "Alchemy's compute-unit rate limit",
      {
        code: 429,
        message:
          "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message. If not, check out https://docs.alchemy.com/reference/throughput",
      },
    ],
    ["Infura's request rate limit", { code: -32005, message: "project ID request rate exceeded" }],
    [
      "Infura's daily cap",
      { code: -32005, message: "daily request count exceeded, request rate limited" },
    ],
    ["the generic limit exceeded", { code: -32005, message: "limit exceeded" }],
    [
      "Chainstack's RPS limit",
      { code: -32005, message: "You've exceeded the RPS limit available on the current plan." },
    ],
    ["an HTTP 429 text", { message: "429 Too Many Requests" }],
    [
      "a rate cap phrased with limited-to",
      { message: "Your plan is limited to 10 requests per second" },
    ],
    ["a rate cap with a grouped number", { message: "limited to 10,000 requests per day" }],
    ["execution reverted", { code: 3, message: "execution reverted" }],
    [
      "a revert reason that reads like a range error",
      { code: 3, message: "execution reverted: block range too large", data: "0x08c379a0" },
    ],
    [
      "a revert reported under -32000",
      {
        code: -32000,
        message: wrapped("execution reverted: query returned more than 10 results", -32000),
      },
    ],
    [
      "method not found",
      { code: -32601, message: "the method eth_getLogs does not exist/is not available" },
    ],
    ["Method not found", { code: -32601, message: "Method not found" }],
    ["header not found", { code: -32000, message: "header not found" }],
    ["missing trie node", { code: -32000, message: "missing trie node 0xabc (path )" }],
    ["geth's inverted range", { code: -32000, message: "invalid block range params" }],
    [
      "a range past the head",
      { code: -32602, message: "block range extends beyond current head block" },
    ],
    // The Base public endpoint sends this on outages too; the transport retries it as a transient error.
    [
      "the Base public endpoint's no-healthy-backend",
      { code: -32011, message: "no backend is currently healthy to serve traffic" },
    ],
    ["an empty message", { message: "" }],
  ];

  test.each(others)("%s returns undefined", (_name, error) => {
    expect(parseRangeError(error)).toBeUndefined();
  });
});

describe("parseRangeError() on the messages of Base's public endpoint and other providers (Optimism's proxyd errors.go, ponder's getLogsRetryHelper.ts)", () => {
  const cases: Array<[string, { code?: number; message: string }, RangeErrorHint]> = [
    [
      "proxyd's block-range limit (HTTP 400, -32602)",
      { code: -32602, message: "block range greater than 10000 max" },
      { kind: "maxRange", blocks: 10000n },
    ],
    [
      "a bare block-range limit",
      { message: "block range exceeds 5000" },
      { kind: "maxRange", blocks: 5000n },
    ],
    [
      "a limit phrased as a size",
      { message: "query must be smaller than size 2000" },
      { kind: "maxRange", blocks: 2000n },
    ],
    [
      "a from/to distance",
      { message: "maximum [from, to] blocks distance: 1024" },
      { kind: "maxRange", blocks: 1024n },
    ],
    [
      "Merkle's 10k blocks",
      { message: "eth_getLogs range is too large, max is 10k blocks" },
      { kind: "maxRange", blocks: 10000n },
    ],
    [
      "an allowed threshold",
      { message: "allowed block range threshold exceeded" },
      { kind: "tooLarge" },
    ],
    ["a bare threshold", { message: "range threshold exceeded" }, { kind: "tooLarge" }],
    ["exceeded max allowed", { message: "exceeded max allowed" }, { kind: "tooLarge" }],
    [
      "proxyd's response too large (HTTP 500, -32020)",
      { code: -32020, message: "backend response too large" },
      { kind: "tooLarge" },
    ],
  ];

  test.each(cases)("%s is a range error", (_name, error, hint) => {
    expect(parseRangeError(error)).toEqual(hint);
    expect(
      parseRangeError({ ...error, message: wrapped(error.message, error.code ?? -32000) }),
    ).toEqual(hint);
  });

  test("a rate cap worded like 'exceeded max allowed' is not a range error", () => {
    expect(
      parseRangeError({ message: "exceeded max allowed requests per second" }),
    ).toBeUndefined();
  });

  test("the stated limit is used instead of halving", () => {
    expect(splitAfterRangeError(0n, 19_999n, { kind: "maxRange", blocks: 10_000n })).toEqual([
      { from: 0n, to: 9_999n },
      { from: 10_000n, to: 19_999n },
    ]);
  });
});

describe("splitAfterRangeError()", () => {
  const halve: RangeErrorHint = { kind: "tooLarge" };

  test("a single block cannot be split", () => {
    expect(splitAfterRangeError(7n, 7n, halve)).toBeUndefined();
    expect(splitAfterRangeError(7n, 7n, { kind: "maxRange", blocks: 1n })).toBeUndefined();
    expect(
      splitAfterRangeError(7n, 7n, { kind: "suggestedRange", from: 7n, to: 7n }),
    ).toBeUndefined();
  });

  test("an empty range is a caller bug and throws", () => {
    expect(() => splitAfterRangeError(8n, 7n, halve)).toThrow(RangeError);
  });

  test("too many results or too large halves the window", () => {
    expect(splitAfterRangeError(100n, 199n, halve)).toEqual([
      { from: 100n, to: 149n },
      { from: 150n, to: 199n },
    ]);
    expect(splitAfterRangeError(0n, 2n, { kind: "maxResults", results: 10000 })).toEqual([
      { from: 0n, to: 1n },
      { from: 2n, to: 2n },
    ]);
    expect(splitAfterRangeError(5n, 6n, halve)).toEqual([
      { from: 5n, to: 5n },
      { from: 6n, to: 6n },
    ]);
  });

  test("a stated block limit cuts the window into consecutive pieces of that size", () => {
    expect(splitAfterRangeError(1000n, 3499n, { kind: "maxRange", blocks: 1000n })).toEqual([
      { from: 1000n, to: 1999n },
      { from: 2000n, to: 2999n },
      { from: 3000n, to: 3499n },
    ]);
  });

  test("a stated block limit at or above the window size halves instead", () => {
    expect(splitAfterRangeError(0n, 999n, { kind: "maxRange", blocks: 1000n })).toEqual([
      { from: 0n, to: 499n },
      { from: 500n, to: 999n },
    ]);
    expect(splitAfterRangeError(0n, 999n, { kind: "maxRange", blocks: 5000n })).toHaveLength(2);
  });

  test("a proper suggested sub-range starting at from sets the piece size", () => {
    expect(
      splitAfterRangeError(0x100n, 0x1ffn, { kind: "suggestedRange", from: 0x100n, to: 0x13fn }),
    ).toEqual([
      { from: 0x100n, to: 0x13fn },
      { from: 0x140n, to: 0x17fn },
      { from: 0x180n, to: 0x1bfn },
      { from: 0x1c0n, to: 0x1ffn },
    ]);
  });

  test("a suggestion of the very range that failed falls back to halving", () => {
    expect(splitAfterRangeError(10n, 29n, { kind: "suggestedRange", from: 10n, to: 29n })).toEqual([
      { from: 10n, to: 19n },
      { from: 20n, to: 29n },
    ]);
  });

  test("a suggestion that does not start at from or overruns the window falls back to halving", () => {
    const halves = [
      { from: 10n, to: 19n },
      { from: 20n, to: 29n },
    ];
    expect(splitAfterRangeError(10n, 29n, { kind: "suggestedRange", from: 12n, to: 15n })).toEqual(
      halves,
    );
    expect(splitAfterRangeError(10n, 29n, { kind: "suggestedRange", from: 10n, to: 40n })).toEqual(
      halves,
    );
    expect(splitAfterRangeError(10n, 29n, { kind: "suggestedRange", from: 0n, to: 5n })).toEqual(
      halves,
    );
  });

  test("a tiny limit on a wide window stops at the piece cap and leaves the rest as one piece", () => {
    const pieces = splitAfterRangeError(0n, 1_000_000n, { kind: "maxRange", blocks: 1n })!;
    expect(pieces).toHaveLength(MAX_PIECES_PER_SPLIT);
    expect(pieces[MAX_PIECES_PER_SPLIT - 2]).toEqual({ from: 998n, to: 998n });
    expect(pieces[MAX_PIECES_PER_SPLIT - 1]).toEqual({ from: 999n, to: 1_000_000n });
  });

  test("pieces for random windows and hints cover the window exactly, in order, each strictly smaller", () => {
    const random = mulberry32(0x8453);
    const below = (n: number) => Math.floor(random() * n);
    const big = (n: number) => BigInt(below(n));
    let splits = 0;
    for (let i = 0; i < 5_000; i++) {
      const from = random() < 0.1 ? 0n : big(2 ** 30) * big(2 ** 10);
      const size = 1n + (random() < 0.5 ? big(20) : big(5_000));
      const to = from + size - 1n;
      const hint = randomHint(from, to, size, below, big);
      const pieces = splitAfterRangeError(from, to, hint);
      if (size === 1n) {
        expect(pieces).toBeUndefined();
        continue;
      }
      splits++;
      const label = `[${from}, ${to}] ${JSON.stringify(hint, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`;
      expect(coverageProblem(from, to, pieces), label).toBeUndefined();
    }
    expect(splits).toBeGreaterThan(4_000);
  });
});

/** What is wrong with `pieces` as a split of [from, to], or undefined when nothing is. */
function coverageProblem(
  from: bigint,
  to: bigint,
  pieces: Array<{ from: bigint; to: bigint }> | undefined,
): string | undefined {
  if (pieces === undefined) return "no pieces";
  if (pieces.length < 2 || pieces.length > MAX_PIECES_PER_SPLIT) return `${pieces.length} pieces`;
  const size = to - from + 1n;
  let next = from;
  for (const piece of pieces) {
    if (piece.from !== next) return `piece starts at ${piece.from}, expected ${next}`;
    if (piece.to < piece.from) return `piece [${piece.from}, ${piece.to}] is empty`;
    if (piece.to - piece.from + 1n >= size)
      return `piece [${piece.from}, ${piece.to}] is not smaller than the window`;
    next = piece.to + 1n;
  }
  return next === to + 1n ? undefined : `pieces end at ${next - 1n}, expected ${to}`;
}

function randomHint(
  from: bigint,
  to: bigint,
  size: bigint,
  below: (n: number) => number,
  big: (n: number) => bigint,
): RangeErrorHint {
  switch (below(7)) {
    case 0:
      return { kind: "tooLarge" };
    case 1:
      return { kind: "maxResults", results: below(20_000) };
    case 2:
      return { kind: "maxRange", blocks: big(Number(size) * 2 + 2) - 1n };
    case 3:
      return { kind: "maxRange", blocks: big(4) };
    case 4:
      return { kind: "suggestedRange", from, to: from + big(Number(size) + 3) };
    case 5:
      return { kind: "suggestedRange", from, to };
    default: {
      const a = from + big(Number(size)) - 2n;
      return { kind: "suggestedRange", from: a, to: a + big(Number(size)) };
    }
  }
}

/** A small seeded PRNG so the property test is the same on every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
