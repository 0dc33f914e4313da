import { describe, expect, test } from "vitest";
import { BaseError, FatalError, RetryableError, walkCauses } from "../../src/errors/base.js";
import { RateLimitedError } from "../../src/errors/rpc.js";

describe("walkCauses()", () => {
  test("returns the first error along the chain the predicate accepts, outermost first", () => {
    const inner = new RateLimitedError("inner");
    const middle = new RetryableError("middle", { cause: inner });
    const outer = new Error("viem's wrapper", { cause: middle });
    expect(walkCauses(outer, (e) => e instanceof RetryableError)).toBe(middle);
    expect(walkCauses(outer, (e) => e instanceof RateLimitedError)).toBe(inner);
    expect(walkCauses(outer, (e) => e instanceof FatalError)).toBeUndefined();
  });

  test("without a predicate returns the innermost error", () => {
    const inner = new TypeError("fetch failed");
    expect(
      walkCauses(new FatalError("outer", { cause: new Error("middle", { cause: inner }) })),
    ).toBe(inner);
    expect(walkCauses("not an error")).toBeUndefined();
  });

  test("walks plain Errors and stops at a cause that is not an Error", () => {
    const seen: string[] = [];
    const error = new Error("a", {
      cause: new Error("b", { cause: { message: "an object, not an Error" } }),
    });
    expect(walkCauses(error, (e) => (seen.push(e.message), false))).toBeUndefined();
    expect(seen).toEqual(["a", "b"]);
    expect(walkCauses(error)?.message).toBe("b");
  });

  test("ends on a chain that comes back to an error it has seen", () => {
    const a = new Error("a");
    const b = new Error("b", { cause: a });
    a.cause = b;
    const seen: string[] = [];
    expect(walkCauses(a, (e) => (seen.push(e.message), false))).toBeUndefined();
    expect(seen).toEqual(["a", "b"]);
  });
});

describe("BaseError.walk()", () => {
  test("finds a cause from the error itself, as viem's does", () => {
    const inner = new RetryableError("timeout", { retryAfterMs: 300 });
    const outer = new BaseError("gave up", { cause: new Error("wrapped", { cause: inner }) });
    expect(outer.walk((e) => e instanceof RetryableError)?.retryAfterMs).toBe(300);
    expect(outer.walk((e) => e === outer)).toBe(outer);
    expect(outer.walk()).toBe(inner);
  });
});
