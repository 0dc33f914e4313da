import type { Worker } from "node:worker_threads";
import { FatalError } from "../errors/base.js";

/**
 * Requests to a worker thread answered by id (the window writer's, the decode thread's): each
 * call's promise settles with its reply, and every waiting call fails at once when the thread
 * fails or exits; later calls fail at once too. `settle` turns a reply into its result, or into
 * the error its call rejects with.
 */
export function createThreadCalls<Reply extends { id: number }, Result>(
  worker: Worker,
  options: { thread: string; settle: (reply: Reply) => Result | Error; onReply?: () => void },
) {
  const waiting = new Map<
    number,
    { resolve: (result: Result) => void; reject: (error: Error) => void }
  >();
  let nextId = 1;
  let failure: Error | undefined;
  const failAll = (error: Error) => {
    failure ??= error;
    for (const { reject } of waiting.values()) reject(failure);
    waiting.clear();
  };
  worker.on("message", (reply: Reply) => {
    options.onReply?.();
    const pending = waiting.get(reply.id);
    if (pending === undefined) return;
    waiting.delete(reply.id);
    const result = options.settle(reply);
    if (result instanceof Error) pending.reject(result);
    else pending.resolve(result);
  });
  worker.on("error", (error) =>
    failAll(new FatalError(`The ${options.thread} failed: ${error.message}`, { cause: error })),
  );
  worker.once("exit", () => failAll(new FatalError(`The ${options.thread} exited`)));
  return {
    /** Sends one request (`send` posts it with its id); settles with its reply. */
    call(send: (id: number) => void): Promise<Result> {
      if (failure !== undefined) return Promise.reject(failure);
      const id = nextId++;
      return new Promise<Result>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        send(id);
      });
    },
    /** Whether the thread failed or exited (then calls fail at once). */
    failed: (): boolean => failure !== undefined,
    /** Calls sent and not yet answered. */
    waiting: (): number => waiting.size,
  };
}
