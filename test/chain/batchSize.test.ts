import { describe, expect, test } from "vitest";
import { createBatchSize } from "../../src/chain/batchSize.js";

describe("createBatchSize()", () => {
  test("has no limit until a batch is refused, then halves per refusal", () => {
    const size = createBatchSize();
    expect(size.current()).toBe(Number.POSITIVE_INFINITY);
    size.refused(10);
    expect(size.current()).toBe(5);
    size.refused(5);
    expect(size.current()).toBe(3);
    size.refused(2);
    expect(size.current()).toBe(1);
  });

  test("climbs one call per batch answered at the size, never to the last refused size", () => {
    const size = createBatchSize();
    size.refused(8);
    expect(size.current()).toBe(4);
    size.answered(2);
    expect(size.current()).toBe(4);
    for (let i = 0; i < 10; i++) size.answered(size.current());
    expect(size.current()).toBe(7);
  });
});
