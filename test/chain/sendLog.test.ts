import { describe, expect, test } from "vitest";
import { createSendLog } from "../../src/chain/sendLog.js";

describe("createSendLog()", () => {
  test("counts the calls that left in a span, less those refused", () => {
    const log = createSendLog();
    for (const at of [100, 200, 300, 400]) log.add(at, 1);
    log.add(450, 3);
    log.markRefused(300, 1);
    // Nothing left at 350: nothing to mark.
    log.markRefused(350, 1);
    expect(log.acceptedIn(100, 450)).toBe(5);
    expect(log.acceptedIn(0, 1_000)).toBe(6);
    expect(log.acceptedIn(450, 1_000)).toBe(0);
  });

  test("says when more calls fit a span: at once, or when enough of the oldest have left it", () => {
    const log = createSendLog();
    expect(log.fitsAt(1, 3, 1_000, 50)).toBe(50);
    log.add(100, 1);
    log.add(200, 1);
    expect(log.fitsAt(1, 3, 1_000, 250)).toBe(250);
    log.add(300, 1);
    expect(log.fitsAt(1, 3, 1_000, 350)).toBe(1_100);
    expect(log.fitsAt(2, 3, 1_000, 350)).toBe(1_200);
    // A batch as large as the span allows waits for the span to empty.
    expect(log.fitsAt(3, 3, 1_000, 350)).toBe(1_300);
    expect(log.fitsAt(1, 3, 1_000, 1_150)).toBe(1_150);
  });

  test("keeps its sums right after forgetting thousands of old sends", () => {
    const log = createSendLog();
    for (let at = 0; at < 5_000; at++) log.add(at, 2);
    log.forgetBefore(4_000);
    expect(log.acceptedIn(4_499, 4_999)).toBe(1_000);
    expect(log.fitsAt(1, 1_000, 500, 4_999.5)).toBe(5_000);
    log.add(5_000, 1);
    expect(log.acceptedIn(4_999, 5_000)).toBe(1);
  });

  test("moves a send that left later than recorded, with what it counts toward", () => {
    const log = createSendLog();
    log.add(100, 1);
    log.add(200, 2);
    log.add(300, 1);
    log.markRefused(200, 2);
    log.moved(200, 450, 2);
    // Nothing recorded at 250: nothing moves.
    log.moved(250, 500, 1);
    expect(log.acceptedIn(0, 400)).toBe(2);
    expect(log.acceptedIn(400, 500)).toBe(0);
    log.add(460, 1);
    // 100, 300, 450 (2 calls), 460 in the span: room for one more call once 100 leaves it.
    expect(log.fitsAt(1, 5, 1_000, 470)).toBe(1_100);
    expect(log.fitsAt(1, 6, 1_000, 470)).toBe(470);
  });
});
