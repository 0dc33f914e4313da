import { describe, expect, test } from "vitest";
import {
  contiguousEnd,
  mergeRanges,
  missingRanges,
  planSegments,
  splitRange,
} from "../src/blockRanges.js";

describe("blockRanges", () => {
  test("mergeRanges() joins overlapping and adjacent ranges and keeps gaps", () => {
    expect(
      mergeRanges([
        { from: 10, to: 20 },
        { from: 0, to: 4 },
        { from: 5, to: 9 },
        { from: 22, to: 30 },
        { from: 25, to: 26 },
      ]),
    ).toEqual([
      { from: 0, to: 20 },
      { from: 22, to: 30 },
    ]);
  });

  test("missingRanges() returns exactly the blocks not yet synced", () => {
    const done = [
      { from: 5, to: 9 },
      { from: 15, to: 19 },
    ];
    expect(missingRanges(done, 0, 24)).toEqual([
      { from: 0, to: 4 },
      { from: 10, to: 14 },
      { from: 20, to: 24 },
    ]);
    expect(missingRanges(done, 5, 9)).toEqual([]);
    expect(missingRanges([], 3, 3)).toEqual([{ from: 3, to: 3 }]);
    expect(missingRanges(done, 7, 16)).toEqual([{ from: 10, to: 14 }]);
  });

  test("contiguousEnd() is the checkpoint: the end of the gap-free run from the start block", () => {
    expect(contiguousEnd([], 100)).toBe(99);
    expect(
      contiguousEnd(
        [
          { from: 100, to: 150 },
          { from: 152, to: 200 },
        ],
        100,
      ),
    ).toBe(150);
    expect(
      contiguousEnd(
        [
          { from: 100, to: 150 },
          { from: 151, to: 200 },
        ],
        100,
      ),
    ).toBe(200);
    expect(contiguousEnd([{ from: 101, to: 150 }], 100)).toBe(99);
  });

  test("splitRange() covers the range with windows no larger than the size", () => {
    expect(splitRange({ from: 0, to: 2_500 }, 1_000)).toEqual([
      { from: 0, to: 999 },
      { from: 1_000, to: 1_999 },
      { from: 2_000, to: 2_500 },
    ]);
    expect(splitRange({ from: 7, to: 7 }, 1_999)).toEqual([{ from: 7, to: 7 }]);
    expect(() => splitRange({ from: 0, to: 1 }, 0)).toThrow();
  });

  test("splitRange() windows cover every block exactly once for random inputs", () => {
    for (let i = 0; i < 500; i++) {
      const from = Math.floor(Math.random() * 1e6);
      const to = from + Math.floor(Math.random() * 20_000);
      const size = 1 + Math.floor(Math.random() * 1_999);
      const windows = splitRange({ from, to }, size);
      expect(windows[0]!.from).toBe(from);
      expect(windows.at(-1)!.to).toBe(to);
      for (const [j, w] of windows.entries()) {
        expect(w.to - w.from + 1).toBeLessThanOrEqual(size);
        if (j > 0) expect(w.from).toBe(windows[j - 1]!.to + 1);
      }
    }
  });

  test("planSegments() groups tokens that need the same blocks into one request", () => {
    const segments = planSegments([
      { member: "a", ranges: [{ from: 0, to: 99 }] },
      { member: "b", ranges: [{ from: 50, to: 99 }] },
      { member: "c", ranges: [{ from: 200, to: 210 }] },
    ]);
    expect(segments).toEqual([
      { from: 0, to: 49, members: ["a"] },
      { from: 50, to: 99, members: ["a", "b"] },
      { from: 200, to: 210, members: ["c"] },
    ]);
  });

  test("planSegments() leaves out blocks no token needs and merges equal neighbours", () => {
    expect(
      planSegments([
        {
          member: "a",
          ranges: [
            { from: 0, to: 9 },
            { from: 10, to: 19 },
          ],
        },
      ]),
    ).toEqual([{ from: 0, to: 19, members: ["a"] }]);
    expect(planSegments([{ member: "a", ranges: [] }])).toEqual([]);
  });
});
