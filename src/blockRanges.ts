/**
 * Block-range arithmetic: plain functions on inclusive ranges, shared by every stage (a leaf module:
 * it imports nothing of flashindex, as errors.ts).
 */

/** Inclusive block range: [from, to] holds to - from + 1 blocks. */
export type BlockRange = { from: number; to: number };

/** Sorts and merges overlapping or adjacent ranges: [1,5] + [6,9] -> [1,9]. */
export function mergeRanges(ranges: readonly BlockRange[]): BlockRange[] {
  const sorted = [...ranges].sort((a, b) => a.from - b.from);
  const merged: BlockRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range.from <= last.to + 1) last.to = Math.max(last.to, range.to);
    else merged.push({ ...range });
  }
  return merged;
}

/** The parts of [from, to] not covered by `done`. */
export function missingRanges(done: readonly BlockRange[], from: number, to: number): BlockRange[] {
  const missing: BlockRange[] = [];
  let cursor = from;
  for (const range of mergeRanges(done)) {
    if (range.to < cursor) continue;
    if (range.from > to) break;
    if (range.from > cursor) missing.push({ from: cursor, to: range.from - 1 });
    cursor = Math.max(cursor, range.to + 1);
  }
  if (cursor <= to) missing.push({ from: cursor, to });
  return missing;
}

/** The last block of the contiguous run starting at `start`, or start - 1 when `start` itself is missing. */
export function contiguousEnd(done: readonly BlockRange[], start: number): number {
  let end = start - 1;
  for (const range of mergeRanges(done)) {
    if (range.from > end + 1) break;
    end = Math.max(end, range.to);
  }
  return end;
}

/** Consecutive windows of at most `size` blocks covering [from, to]. */
export function splitRange(range: BlockRange, size: number): BlockRange[] {
  if (size < 1) throw new RangeError(`window size must be at least 1, got ${size}`);
  const windows: BlockRange[] = [];
  for (let from = range.from; from <= range.to; from += size)
    windows.push({ from, to: Math.min(range.to, from + size - 1) });
  return windows;
}

export type Segment<T> = BlockRange & { members: T[] };

/**
 * Cuts the block line into segments where the set of members needing sync is constant, so one
 * eth_getLogs per window can cover every token that still needs those blocks.
 */
export function planSegments<T>(
  needs: ReadonlyArray<{ member: T; ranges: readonly BlockRange[] }>,
): Segment<T>[] {
  const cuts = new Set<number>();
  for (const { ranges } of needs) for (const r of ranges) cuts.add(r.from).add(r.to + 1);
  const points = [...cuts].sort((a, b) => a - b);
  const segments: Segment<T>[] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const from = points[i]!;
    const to = points[i + 1]! - 1;
    const members = needs
      .filter(({ ranges }) => ranges.some((r) => r.from <= from && to <= r.to))
      .map((n) => n.member);
    if (members.length === 0) continue;
    const last = segments[segments.length - 1];
    if (last !== undefined && last.to + 1 === from && sameMembers(last.members, members))
      last.to = to;
    else segments.push({ from, to, members });
  }
  return segments;
}

function sameMembers<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}
