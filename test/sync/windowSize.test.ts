import { describe, expect, test } from "vitest";
import {
  createWindowSize,
  DENSITY_MARGIN,
  GROW_AFTER_SUCCESSES,
  INITIAL_WINDOW_BLOCKS,
  RATE_LIMITED_TARGET_LOGS_PER_WINDOW,
  TARGET_LOGS_PER_WINDOW,
} from "../../src/sync/historical/windowSize.js";

describe("createWindowSize()", () => {
  test("starts small, and doubles toward the configured size while windows are sparse", () => {
    const size = createWindowSize(1_000);
    expect(size.current()).toBe(INITIAL_WINDOW_BLOCKS);
    const seen = [];
    for (let i = 0; i < 8; i++) {
      size.recordSuccess(size.current(), 10);
      seen.push(size.current());
    }
    expect(seen).toEqual([20, 40, 80, 160, 320, 640, 1_000, 1_000]);
  });

  test("a configured size below the initial one is used from the start", () => {
    expect(createWindowSize(4).current()).toBe(4);
  });

  test("settles where windows bring about the target number of logs on a dense range", () => {
    const size = createWindowSize(1_000);
    const logsPerBlock = 500;
    for (let i = 0; i < 10; i++) size.recordSuccess(size.current(), size.current() * logsPerBlock);
    expect(size.current()).toBe(TARGET_LOGS_PER_WINDOW / logsPerBlock);
    expect(size.current() * logsPerBlock).toBeLessThanOrEqual(TARGET_LOGS_PER_WINDOW);
  });

  test("follows the caller's target as it changes: larger windows while the provider limits the rate", () => {
    let rateLimited = false;
    const size = createWindowSize(1_000, () =>
      rateLimited ? RATE_LIMITED_TARGET_LOGS_PER_WINDOW : TARGET_LOGS_PER_WINDOW,
    );
    const logsPerBlock = 500;
    for (let i = 0; i < 10; i++) size.recordSuccess(size.current(), size.current() * logsPerBlock);
    expect(size.current()).toBe(TARGET_LOGS_PER_WINDOW / logsPerBlock);
    rateLimited = true;
    for (let i = 0; i < 10; i++) size.recordSuccess(size.current(), size.current() * logsPerBlock);
    expect(size.current()).toBe(RATE_LIMITED_TARGET_LOGS_PER_WINDOW / logsPerBlock);
    rateLimited = false;
    size.recordSuccess(size.current(), size.current() * logsPerBlock);
    expect(size.current()).toBe(TARGET_LOGS_PER_WINDOW / logsPerBlock);
  });

  test("never grows past what the density allows in one step, less a margin when the window brought much less than the target", () => {
    const size = createWindowSize(1_000);
    // 10 blocks brought 10/16 of the target: 16 blocks would bring the target; growth stops under it, not at 20.
    size.recordSuccess(10, (TARGET_LOGS_PER_WINDOW * 10) / 16);
    expect(size.current()).toBe(Math.floor(16 * (1 - DENSITY_MARGIN)));
  });

  test("jumps to the size the density allows once a window showed it, instead of doubling", () => {
    let rateLimited = false;
    const size = createWindowSize(1_000, () =>
      rateLimited ? RATE_LIMITED_TARGET_LOGS_PER_WINDOW : TARGET_LOGS_PER_WINDOW,
    );
    size.recordSuccess(size.current(), size.current() * 500);
    expect(size.current()).toBe(TARGET_LOGS_PER_WINDOW / 500);
    rateLimited = true;
    size.recordSuccess(size.current(), size.current() * 500);
    // 4 blocks to 19 at once (20 less the margin), then to 20 from a window within the margin.
    expect(size.current()).toBe(
      Math.floor((RATE_LIMITED_TARGET_LOGS_PER_WINDOW / 500) * (1 - DENSITY_MARGIN)),
    );
    size.recordSuccess(size.current(), size.current() * 500);
    expect(size.current()).toBe(RATE_LIMITED_TARGET_LOGS_PER_WINDOW / 500);
  });

  test("a result cap the provider stated becomes the target, with no run of successes to wait for", () => {
    const size = createWindowSize(1_000, () => RATE_LIMITED_TARGET_LOGS_PER_WINDOW);
    size.recordSuccess(size.current(), size.current() * 500);
    expect(size.current()).toBe(19);
    // A 19-block window of 9,500 logs was refused: "more than 4000 results"; it was split in two.
    size.shrinkTo(10);
    size.capResults(4_000);
    size.recordSuccess(10, 5_000);
    expect(size.current()).toBe(8);
    size.recordSuccess(8, 4_000);
    expect(size.current()).toBe(8);
  });

  test("after a provider range error, grows back only after a run of successes", () => {
    const size = createWindowSize(1_000);
    size.shrinkTo(10);
    for (let i = 1; i < GROW_AFTER_SUCCESSES; i++) size.recordSuccess(10, 0);
    expect(size.current()).toBe(10);
    size.recordSuccess(10, 0);
    expect(size.current()).toBe(20);
    // And again only after the next run.
    for (let i = 1; i < GROW_AFTER_SUCCESSES; i++) size.recordSuccess(20, 0);
    expect(size.current()).toBe(20);
    size.recordSuccess(20, 0);
    expect(size.current()).toBe(40);
  });

  test("a block-range limit the provider stated is never exceeded again", () => {
    const size = createWindowSize(1_000);
    size.shrinkTo(3, true);
    for (let i = 0; i < 5 * GROW_AFTER_SUCCESSES; i++) size.recordSuccess(3, 0);
    expect(size.current()).toBe(3);
  });
});
