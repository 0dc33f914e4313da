import { zeroAddress, type Address, type Hex } from "viem";

/**
 * The saved bench chains' shapes, drawn from a seeded PRNG so the same seed always plans the same
 * chain: payments between holders drawn at random (not consecutive addresses, whose index inserts
 * would all land at a B-tree's right edge), random values, and now and then a mint.
 * - `dense`: one transaction a block carrying 500 Transfer logs (the bench's original shape).
 * - `base-mix`: several token transactions a block with 1–12 Transfer logs each, most with one or
 *   two as on Base, beside transactions that touch no token (their calldata is what a full block
 *   costs to fetch).
 */
export type ChainShape = "dense" | "base-mix";

export const CHAIN_SHAPES: readonly ChainShape[] = ["dense", "base-mix"];

/** The seed every saved chain is drawn with. */
export const CHAIN_SEED = 0x8453_3009;

/** How many addresses senders and recipients are drawn from. */
export const HOLDERS = 65_536;

/** About one Transfer in this many is a mint (from the zero address). */
const MINT_ONE_IN = 256;
/** Values are drawn from 1..MAX_VALUE (a million USDC at 6 decimals). */
const MAX_VALUE = 10n ** 12n;
const DENSE_LOGS_PER_TX = 500;
/** base-mix: token transactions per block, uniform in [MIN, MAX]. */
const MIX_TOKEN_TXS = [4, 36] as const;
/** base-mix: transactions per block that touch no token, uniform in [0, MAX]. */
const MIX_OTHER_TXS_MAX = 16;
/** base-mix: logs per token transaction, 1..12 with weights falling as 1/k² (mostly one or two). */
const MIX_LOG_WEIGHTS = Array.from({ length: 12 }, (_, i) => 1 / (i + 1) ** 2);

export type PlannedTransfer = { from: Address; to: Address; value: bigint };
/** One block: its token transactions (each a list of Transfers) and the calldata of its other transactions. */
export type PlannedBlock = { tokenTxs: PlannedTransfer[][]; otherTxs: Hex[] };

/** sfc32, seeded through splitmix32: small, fast, and the same sequence on every platform. */
export function createPrng(seed: number): () => number {
  let s = seed >>> 0;
  const splitmix = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix();
  let b = splitmix();
  let c = splitmix();
  let d = splitmix();
  return () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
}

/** A whole number in [min, max], from the PRNG. */
function uniform(next: () => number, min: number, max: number): number {
  return min + (next() % (max - min + 1));
}

function hexWords(next: () => number, words: number): Hex {
  let hex = "0x";
  for (let i = 0; i < words; i++) hex += next().toString(16).padStart(8, "0");
  return hex as Hex;
}

/**
 * Plans a chain of exactly `logs` Transfer logs in the given shape, block by block (a generator: a
 * 1,000,000-log plan is never held whole). The same (shape, logs, seed) always yields the same blocks.
 */
export function* planChain(
  shape: ChainShape,
  logs: number,
  seed = CHAIN_SEED,
): Generator<PlannedBlock> {
  const next = createPrng(seed);
  const holders = Array.from({ length: HOLDERS }, () => hexWords(next, 5) as Address);
  const holder = () => holders[next() % HOLDERS]!;
  const transfer = (): PlannedTransfer => {
    const from = next() % MINT_ONE_IN === 0 ? zeroAddress : holder();
    const value = (((BigInt(next()) << 32n) | BigInt(next())) % MAX_VALUE) + 1n;
    return { from, to: holder(), value };
  };
  const totalWeight = MIX_LOG_WEIGHTS.reduce((sum, w) => sum + w, 0);
  const mixLogs = () => {
    let pick = (next() / 2 ** 32) * totalWeight;
    for (let k = 0; k < MIX_LOG_WEIGHTS.length; k++) {
      pick -= MIX_LOG_WEIGHTS[k]!;
      if (pick < 0) return k + 1;
    }
    return MIX_LOG_WEIGHTS.length;
  };
  let left = logs;
  while (left > 0) {
    const tokenTxs: PlannedTransfer[][] = [];
    const otherTxs: Hex[] = [];
    if (shape === "dense") {
      const size = Math.min(DENSE_LOGS_PER_TX, left);
      tokenTxs.push(Array.from({ length: size }, transfer));
      left -= size;
    } else {
      const count = uniform(next, MIX_TOKEN_TXS[0], MIX_TOKEN_TXS[1]);
      for (let t = 0; t < count && left > 0; t++) {
        const size = Math.min(mixLogs(), left);
        tokenTxs.push(Array.from({ length: size }, transfer));
        left -= size;
      }
      const others = uniform(next, 0, MIX_OTHER_TXS_MAX);
      // Calldata of 4–580 bytes, as swaps, mints and account-abstraction bundles carry.
      for (let o = 0; o < others; o++) otherTxs.push(hexWords(next, 1 + uniform(next, 0, 144)));
    }
    yield { tokenTxs, otherTxs };
  }
}
