import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { hedgedCall } from "../../src/chain/hedgedCall.js";

const after = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));
const failAfter = (ms: number, message: string) =>
  new Promise<never>((_, reject) => setTimeout(() => reject(new Error(message)), ms));

/** Settles `promise` on the fake clock: its outcome as a value, so a rejection is never left unhandled. */
async function settle<T>(promise: Promise<T>, ms = 1_000) {
  const outcome = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  await vi.advanceTimersByTimeAsync(ms);
  return outcome;
}

describe("hedgedCall()", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  test("an answer before the hedge is due sends nothing more", async () => {
    const calls: number[] = [];
    expect(await settle(hedgedCall((hedge) => (calls.push(hedge), after(5, "first")), 50))).toEqual(
      { value: "first" },
    );
    expect(calls).toEqual([0]);
  });

  test("a call that hangs past the hedge is sent again, and the first answer wins", async () => {
    const calls: number[] = [];
    const result = hedgedCall(
      (hedge) => (
        calls.push(hedge),
        hedge === 0 ? new Promise<string>(() => undefined) : after(5, "hedge")
      ),
      20,
    );
    expect(await settle(result)).toEqual({ value: "hedge" });
    expect(calls).toEqual([0, 1]);
  });

  test("a failure waits for the other call: the hedge's answer still wins", async () => {
    const result = hedgedCall(
      (hedge) => (hedge === 0 ? failAfter(40, "first") : after(60, "hedge")),
      20,
    );
    expect(await settle(result)).toEqual({ value: "hedge" });
  });

  test("both failing throw the failure that came first", async () => {
    const result = hedgedCall((hedge) => failAfter(hedge === 0 ? 40 : 5, `call ${hedge}`), 20);
    expect(await settle(result)).toEqual({ error: new Error("call 1") });
  });

  test("a call that fails before the hedge is due fails at once: the caller's retry backs off", async () => {
    const calls: number[] = [];
    expect(
      await settle(hedgedCall((hedge) => (calls.push(hedge), failAfter(5, "503")), 50)),
    ).toEqual({ error: new Error("503") });
    expect(calls).toEqual([0]);
  });
});
