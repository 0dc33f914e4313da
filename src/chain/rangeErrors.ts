/**
 * How RPC providers refuse an eth_getLogs window that is too wide or whose answer is too large, and
 * which windows to try next. Providers say it in prose, each their own way; every pattern below names
 * the provider that sends it. Block ranges here are inclusive: [from, to] holds to - from + 1 blocks.
 */

export type { RangeErrorHint } from "../errors/rpc.js";
import type { RangeErrorHint } from "../errors/rpc.js";

/** Most windows one split returns; past it the rest stays one window, to be split again if refused. */
export const MAX_PIECES_PER_SPLIT = 1_000;

/**
 * A count as providers write it: `10000`, `10,000`, `2K`, `1.5K`, `0x2710`. Named groups `n` and `k`.
 * No alternative may stop inside a longer number, or `10,000 requests` would backtrack to read `10`.
 */
const COUNT = String.raw`(?<n>0x[0-9a-f]+(?![0-9a-f])|\d{1,3}(?:[.,]\d{3})+(?![.,]?\d)|\d+\.\d+(?=\s?k\b)|\d+(?![.,]?\d))(?<k>\s?k\b)?`;

/** Refuses a number that counts something other than blocks (`10 requests per second`, `5 MB`). */
const NOT_A_RATE = String.raw`(?!\s*(?:requests?|reqs?|calls?|per\b|/|rps\b|cus?\b|compute|credits?|logs?\b|results?\b|bytes?\b|[kmg]i?b\b|ms\b|s\b|sec|seconds?\b|minutes?\b|hours?\b))`;

const HEX_OR_DECIMAL = String.raw`0x[0-9a-f]+|\d+`;

const rx = (source: string): RegExp => new RegExp(source, "i");

/** Explicit ranges to retry with; named groups `from` and `to`. */
const SUGGESTED_RANGE_PATTERNS: readonly RegExp[] = [
  // Note: Alchemy, "... Based on your parameters and the response size limit, this block range should work: [0xc5dc00, 0xc614a7]"
  // (also after "Under the Free tier plan ..." and "Query timeout exceeded ...").
  rx(
    String.raw`this block range should work:?\s*\[\s*(?<from>${HEX_OR_DECIMAL})\s*,\s*(?<to>${HEX_OR_DECIMAL})\s*\]`,
  ),
  // Note: Infura (and zkSync Era, thirdweb in error.data), "query returned more than 10000 results. Try with this block range [0xBDE5F8, 0x102DBCC]."
  rx(
    String.raw`try with this block range\s*\[\s*(?<from>${HEX_OR_DECIMAL})\s*,\s*(?<to>${HEX_OR_DECIMAL})\s*\]`,
  ),
  // Note: reth/op-reth (served by DRPC, BlastAPI, Llamanodes), "query exceeds max results 20000, retry with the range 50784086-50785570".
  rx(String.raw`retry with the range\s+(?<from>\d+)\s*-\s*(?<to>\d+)`),
];

/** Stated block-range limits; named groups from COUNT. */
const MAX_RANGE_PATTERNS: readonly RegExp[] = [
  // Note: Alchemy, "You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, ..."
  // (free tier: "up to a 10 block range").
  rx(String.raw`up to an? ${COUNT}[ -]?blocks? range`),
  // Note: geth/op-geth and BSC-style nodes (PublicNode), "exceed maximum block range: 10000"; reth/op-reth, "query exceeds
  // max block range 1000"; Cloudflare, "'fromBlock'-'toBlock' range too large. Max range: 3500"; Celo, "max block range 5000, got ...".
  rx(String.raw`\bmax(?:imum)?(?: block)? range:?\s*${COUNT}${NOT_A_RATE}`),
  // Note: Infura as users quote it (-32005), "Exceeded max range limit for eth_getLogs: 1000".
  rx(String.raw`max range limit(?: for eth_getlogs)?:?\s*${COUNT}${NOT_A_RATE}`),
  // Note: Infura (-32602), "range 1000000 exceeds limit of 10000"; Ronin, "requested block range 16777217 exceeds the limit of 200".
  rx(String.raw`range \d+ exceeds (?:the )?limit of ${COUNT}${NOT_A_RATE}`),
  // Note: Tenderly and thirdweb, in error.data behind "invalid params": "range 9009594 is bigger than range limit 2000".
  rx(String.raw`is bigger than range limit ${COUNT}`),
  // Note: QuickNode (-32614), "eth_getLogs is limited to a 10,000 range" and "eth_getLogs and eth_newFilter are limited to a
  // 10,000 blocks range"; mainnet.base.org sends the first; BlockPI, "limited to 1000 block range"; 1RPC, "limited to 0 - 50 blocks range".
  rx(
    String.raw`limited to (?:an? )?(?:\d+\s*-\s*)?${COUNT}(?:\s*blocks?\b|\s*range\b|(?!\s*[a-z0-9]))`,
  ),
  // Note: Avalanche C-Chain and Flare (coreth), "requested too many blocks from 0 to 27842567, maximum is set to 2048".
  rx(String.raw`too many blocks from \d+ to \d+,? maximum is set to ${COUNT}`),
  // Note: DRPC (code 35), "ranges over 10000 blocks are not supported on free plan".
  rx(String.raw`ranges? over ${COUNT} blocks? (?:are|is) not supported`),
  // Note: BlastAPI paid plans, "exceeds the range allowed for your plan (5000 > 3000)".
  rx(String.raw`range allowed for your plan \(\d+ > ${COUNT}\)`),
  // Note: Coinbase Developer Platform (Base node), "please limit the query to at most 1000 blocks".
  rx(String.raw`at most ${COUNT} blocks`),
  // Note: Nodies, "Block range too large: maximum allowed is 50 blocks on your current plan" and "block range too large, max 250";
  // Sei, "block range too large (2000), maximum allowed is 1000 blocks".
  rx(String.raw`maximum allowed is ${COUNT} blocks?`),
  rx(String.raw`range too large,? max ${COUNT}${NOT_A_RATE}`),
  // Note: Moonbeam/Frontier, "block range is too wide (maximum 1024)".
  rx(String.raw`too wide \(maximum ${COUNT}\)`),
  // Note: thirdweb, "Maximum allowed number of requested blocks is 3500".
  rx(String.raw`number of requested blocks is ${COUNT}`),
  // Note: Optimism's proxyd in front of mainnet.base.org (HTTP 400, -32602), "block range greater than 10000 max".
  rx(String.raw`block range greater than ${COUNT} max`),
  // Note: seen from other providers (listed with ponder's getLogsRetryHelper), "block range exceeds 5000".
  rx(String.raw`block range exceeds (?:the )?(?:limit (?:of )?)?${COUNT}${NOT_A_RATE}`),
  // Note: a provider that phrases its block-range cap as a size (listed with ponder's getLogsRetryHelper), "query must be smaller than size 5000"; read as blocks
  // (a cap at or above the refused window is halved instead, so a result-count reading cannot loop).
  rx(String.raw`query must be smaller than size ${COUNT}${NOT_A_RATE}`),
  // Note: a provider that states the distance between from and to, "maximum [from, to] blocks distance: 2000".
  rx(String.raw`maximum \[from, ?to\] blocks distance:?\s*${COUNT}`),
  // Note: Merkle, "eth_getLogs range is too large, max is 10k blocks".
  rx(String.raw`max is ${COUNT} blocks?`),
];

/** Stated result-count limits; named groups from COUNT. */
const MAX_RESULTS_PATTERNS: readonly RegExp[] = [
  // Note: Infura, Erigon and geth-derived nodes (op-geth providers, zkSync, Polygon zkEVM), "query returned more than 10000 results".
  rx(String.raw`returned more than ${COUNT} results`),
  // Note: reth/op-reth (DRPC, BlastAPI, Llamanodes), "query exceeds max results 20000" when its retry range is unusable.
  rx(String.raw`exceeds max results ${COUNT}`),
  // Note: Arbitrum Nitro, "logs matched by query exceeds limit of 10000".
  rx(String.raw`logs matched by query exceeds limit of ${COUNT}`),
];

/** Range or size refusals that carry no usable number. */
const TOO_LARGE_PATTERNS: readonly RegExp[] = [
  // Note: Alchemy, "Log response size exceeded." (older answers add "Please reduce query block range.").
  /log response size exceeded/i,
  // Note: Alchemy, "Query timeout exceeded. Consider reducing your block range." and "Please reduce query block range."
  /reduc(?:e|ing) (?:your |the )?(?:query )?block range/i,
  // Note: Ankr, "block range is too wide"; Base public endpoint and Nodies, "block range too large"; Optimism, "Block range is
  // too large"; Cloudflare, "'fromBlock'-'toBlock' range too large"; Chainstack and others, "requested range too large".
  /range (?:is )?too (?:large|wide|big)/i,
  // Note: Chainstack, "Block range limit exceeded."
  /range limit exceeded/i,
  // Note: Infura as users quote it, "Exceeded max range limit for eth_getLogs", here without a number.
  /exceeded max(?:imum)? range/i,
  // Note: 1RPC and NodeReal, "response size should not greater than 10000000 bytes" (a byte cap, not a result count).
  /response size should not (?:be )?greater than/i,
  // Note: Optimism's proxyd in front of mainnet.base.org (-32020), "backend response too large".
  /backend response too large/i,
  // Note: providers without a number, "allowed block range threshold exceeded" and "range threshold exceeded".
  /range threshold exceeded/i,
  // Note: a provider without a number, "exceeded max allowed (block range)"; a rate cap ("exceeded max allowed requests") is not one.
  /exceeded max allowed(?!\s*(?:requests?|calls?|rate|rps|compute|credits?))/i,
  // Note: reth/op-reth and Avalanche variants without a number: "query exceeds max results", "requested too many blocks".
  /exceeds max results/i,
  /requested too many blocks/i,
];

// Whatever a reverted call says is contract-controlled text ("execution reverted: block range too large"), never a provider limit.
const EXECUTION_REVERTED_CODE = 3;
const EXECUTION_REVERTED = /execution reverted/i;

/** Recognises a provider's "range too large / too many results" rejection; undefined when the error is something else. */
export function parseRangeError(error: {
  code?: number | undefined;
  message: string;
  data?: unknown;
}): RangeErrorHint | undefined {
  const texts = textsOf(error);
  if (error.code === EXECUTION_REVERTED_CODE || texts.some((t) => EXECUTION_REVERTED.test(t)))
    return undefined;

  for (const pattern of SUGGESTED_RANGE_PATTERNS) {
    for (const text of texts) {
      const range = suggestedRange(pattern.exec(text));
      if (range !== undefined) return range;
    }
  }
  const structured = structuredSuggestion(error.data);
  if (structured !== undefined) return structured;

  const blocks = firstCount(MAX_RANGE_PATTERNS, texts);
  if (blocks !== undefined) return { kind: "maxRange", blocks };
  const results = firstCount(MAX_RESULTS_PATTERNS, texts);
  if (results !== undefined) return { kind: "maxResults", results: Number(results) };
  if (TOO_LARGE_PATTERNS.some((p) => texts.some((t) => p.test(t)))) return { kind: "tooLarge" };
  return undefined;
}

/**
 * The next windows to try after a range error on [from, to] (inclusive); never returns [from, to] itself; returns
 * undefined when the window is a single block and cannot be split. The pieces cover [from, to] in order, without gap or
 * overlap, each strictly smaller than the refused window.
 */
export function splitAfterRangeError(
  from: bigint,
  to: bigint,
  hint: RangeErrorHint,
): Array<{ from: bigint; to: bigint }> | undefined {
  if (to < from) throw new RangeError(`splitAfterRangeError() got an empty range [${from}, ${to}]`);
  const size = to - from + 1n;
  if (size === 1n) return undefined;
  return chunk(from, to, pieceSize(from, to, size, hint));
}

/** Blocks per piece, always in [1, size - 1]. */
function pieceSize(from: bigint, to: bigint, size: bigint, hint: RangeErrorHint): bigint {
  const half = (size + 1n) / 2n;
  switch (hint.kind) {
    case "suggestedRange":
      // Note: a Base node was seen suggesting the very range that had just failed; only a proper sub-range starting at
      // `from` is believed, anything else is halved so the loop always makes progress.
      return hint.from === from && hint.to >= from && hint.to < to ? hint.to - from + 1n : half;
    case "maxRange":
      // A limit at or above the refused window's size is evidently not the limit that applied: halve.
      return hint.blocks >= 1n && hint.blocks < size ? hint.blocks : half;
    case "maxResults":
    case "tooLarge":
      return half;
  }
}

/** Consecutive windows of `step` blocks over [from, to]; the last one takes the rest once MAX_PIECES_PER_SPLIT is reached. */
function chunk(from: bigint, to: bigint, step: bigint): Array<{ from: bigint; to: bigint }> {
  const pieces: Array<{ from: bigint; to: bigint }> = [];
  for (let start = from; start <= to;) {
    const last = pieces.length === MAX_PIECES_PER_SPLIT - 1 || to - start < step;
    const end = last ? to : start + step - 1n;
    pieces.push({ from: start, to: end });
    start = end + 1n;
  }
  return pieces;
}

/** The provider's words: the message, and `data` when it is a string or holds one (Tenderly nests it in `payload`). */
function textsOf(error: { message: string; data?: unknown }): string[] {
  const texts = [error.message];
  const { data } = error;
  if (typeof data === "string") texts.push(data);
  else if (isRecord(data)) {
    for (const key of ["message", "payload"] as const) {
      const value = data[key];
      if (typeof value === "string") texts.push(value);
    }
  }
  return texts;
}

function suggestedRange(match: RegExpExecArray | null): RangeErrorHint | undefined {
  const from = match?.groups?.from;
  const to = match?.groups?.to;
  if (from === undefined || to === undefined) return undefined;
  const range = { kind: "suggestedRange" as const, from: BigInt(from), to: BigInt(to) };
  return range.from <= range.to ? range : undefined;
}

/**
 * Note: Infura repeats its suggestion as `data: { from: "0xBDE5F8", limit: 10000, to: "0x102DBCC" }`. The numeric `limit`
 * is required: some nodes echo the request in `data`, and reading `from`/`to` from an echo would retry the refused range.
 */
function structuredSuggestion(data: unknown): RangeErrorHint | undefined {
  if (!isRecord(data) || typeof data.limit !== "number") return undefined;
  const { from, to } = data;
  if (
    typeof from !== "string" ||
    typeof to !== "string" ||
    !/^0x[0-9a-f]+$/i.test(from) ||
    !/^0x[0-9a-f]+$/i.test(to)
  )
    return undefined;
  const range = { kind: "suggestedRange" as const, from: BigInt(from), to: BigInt(to) };
  return range.from <= range.to ? range : undefined;
}

/** The first positive count any pattern reads from any text, in pattern order. */
function firstCount(patterns: readonly RegExp[], texts: readonly string[]): bigint | undefined {
  for (const pattern of patterns) {
    for (const text of texts) {
      const groups = pattern.exec(text)?.groups;
      if (groups?.n === undefined) continue;
      const count = readCount(groups.n, groups.k !== undefined);
      if (count !== undefined) return count;
    }
  }
  return undefined;
}

/** `10,000` → 10000n, `2K` → 2000n, `1.5K` → 1500n, `0x2710` → 10000n; undefined for zero or a fraction of one. */
function readCount(digits: string, kilo: boolean): bigint | undefined {
  let count: bigint;
  if (/^0x/i.test(digits)) {
    if (kilo) return undefined;
    count = BigInt(digits);
  } else if (kilo) {
    const value = Number(digits.replace(/,/g, "")) * 1000;
    if (!Number.isSafeInteger(value)) return undefined;
    count = BigInt(value);
  } else {
    count = BigInt(digits.replace(/[.,]/g, ""));
  }
  return count >= 1n ? count : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
