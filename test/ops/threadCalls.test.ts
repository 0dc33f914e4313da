import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { FatalError } from "../../src/errors/base.js";
import { createThreadCalls } from "../../src/ops/threadCalls.js";

/** A thread that doubles `n`, answers "odd" as an error, and exits when asked to (with calls still waiting). */
const DOUBLER = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", ({ id, n }) => {
  if (n === "exit") process.exit(0);
  if (n === "later") return;
  parentPort.postMessage(n % 2 === 0 ? { id, doubled: n * 2 } : { id, error: "odd" });
});`;

type Reply = { id: number; doubled?: number; error?: string };

describe("createThreadCalls()", () => {
  test("settles each call with its own reply, in any order, and fails every waiting and later call when the thread exits", async () => {
    const worker = new Worker(DOUBLER, { eval: true });
    let replies = 0;
    const calls = createThreadCalls<Reply, number>(worker, {
      thread: "doubling thread",
      onReply: () => replies++,
      settle: (reply) => reply.doubled ?? new FatalError(`could not double: ${reply.error}`),
    });
    const send = (n: number | string) => calls.call((id) => worker.postMessage({ id, n }));
    expect(await Promise.all([send(2), send(4), send(10)])).toEqual([4, 8, 20]);
    await expect(send(3)).rejects.toThrow("could not double: odd");
    expect(replies).toBe(4);

    const waiting = send("later");
    expect(calls.waiting()).toBe(1);
    void send("exit").catch(() => undefined);
    await expect(waiting).rejects.toThrow("The doubling thread exited");
    expect(calls.failed()).toBe(true);
    expect(calls.waiting()).toBe(0);
    await expect(send(2)).rejects.toBeInstanceOf(FatalError);
  });
});
