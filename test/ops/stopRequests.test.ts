import { describe, expect, test } from "vitest";
import { createStopRequests, REPEAT_WINDOW_MS } from "../../src/ops/stopRequests.js";

describe("createStopRequests()", () => {
  test("the same signal within the window is a copy of the first request; after the window it forces", () => {
    const requests = createStopRequests(1_000);
    expect(requests.classify("SIGINT", 5_000)).toBe("stop");
    expect(requests.classify("SIGINT", 5_012)).toBe("copy");
    expect(requests.classify("SIGINT", 5_999)).toBe("copy");
    expect(requests.classify("SIGINT", 6_000)).toBe("force");
  });

  test("the window runs from the first signal: a stream of copies does not keep extending it", () => {
    const requests = createStopRequests(1_000);
    expect(requests.classify("SIGTERM", 0)).toBe("stop");
    expect(requests.classify("SIGTERM", 600)).toBe("copy");
    expect(requests.classify("SIGTERM", 1_200)).toBe("force");
  });

  test("another signal is a deliberate second request, whenever it comes", () => {
    const requests = createStopRequests();
    expect(requests.classify("SIGTERM", 100)).toBe("stop");
    expect(requests.classify("SIGINT", 101)).toBe("force");
  });

  test("the default window is about a second", () => {
    const requests = createStopRequests();
    expect(REPEAT_WINDOW_MS).toBe(1_000);
    requests.classify("SIGINT", 0);
    expect(requests.classify("SIGINT", REPEAT_WINDOW_MS - 1)).toBe("copy");
    expect(requests.classify("SIGINT", REPEAT_WINDOW_MS)).toBe("force");
  });
});
