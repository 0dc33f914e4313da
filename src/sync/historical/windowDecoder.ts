import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Worker } from "node:worker_threads";
import { FatalError } from "../../errors/base.js";
import { HeldBackError } from "../../errors/rpc.js";
import { startThread } from "../../ops/startThread.js";
import {
  decodeThreadNice,
  DECODE_THREAD_HEAP_MB,
  DECODE_THREAD_MIN_ANSWER_BYTES,
  DECODE_THREAD_MIN_LOGS,
  DECODE_THREAD_YOUNG_MB,
  type ProcessMode,
} from "../../ops/threadSettings.js";
import { createThreadCalls } from "../../ops/threadCalls.js";
import { transportFailureError } from "../../chain/httpTransport.js";
import type { OutgoingRequest } from "../../chain/rpcClient.js";
import {
  attributeTransactionsAnswer,
  type AttributedAnswer,
  type TransactionsAnswer,
  type TransactionsContext,
} from "./transactionsAnswer.js";
import { decodeWindowAnswer } from "./windowAnswer.js";
import type {
  DecodeReply,
  DecodeRequest,
  DecodeThreadData,
  LeftNotice,
  SendRequest,
} from "./windowDecoderThread.js";
import type { DecodedWindow, WindowAnswer, WindowContext } from "../../decode/decodedWindow.js";

export type WindowDecoder = {
  decode: (answer: WindowAnswer) => Promise<DecodedWindow>;
  /** A window's transactions (transactionsAnswer.ts): on the thread once it runs, else here. */
  attribute: (answer: TransactionsAnswer) => Promise<AttributedAnswer>;
  /**
   * Once the thread runs, the same two with the request sent from the thread as well (the RPC
   * client's SendElsewhere): the answer's bytes never reach this thread. Undefined before.
   */
  sender: () => ThreadSender | undefined;
  close: () => Promise<void>;
};

/** `onLeft`: told when the thread sent the request (performance.now() ms of this thread). */
export type ThreadSender = {
  decode: (
    request: OutgoingRequest,
    window: WindowContext,
    signal: AbortSignal,
    onLeft?: (at: number) => void,
  ) => Promise<DecodedWindow>;
  attribute: (
    request: OutgoingRequest,
    batch: TransactionsContext,
    signal: AbortSignal,
    onLeft?: (at: number) => void,
  ) => Promise<AttributedAnswer>;
};

/**
 * Decodes backfill windows' answers (windowAnswer.ts). Receiving, parsing, checking, decoding and
 * packing an answer is most of the main thread's work in a backfill and its garbage; on the decode
 * thread (which sends the requests too, `sender`) it no longer holds up live messages
 * (pre-confirmations, heads) for milliseconds at a time. The first DECODE_THREAD_MIN_LOGS logs
 * (`threadAfterLogs`) are decoded on the caller's thread, unless an answer is too large for it
 * (DECODE_THREAD_MIN_ANSWER_BYTES); in the daemon (`mode`) the thread runs at a lower priority
 * (ops/threadSettings.ts).
 */
export function createWindowDecoder(
  options: { threadAfterLogs?: number | undefined; mode?: ProcessMode | undefined } = {},
): WindowDecoder {
  const threadAfterLogs = options.threadAfterLogs ?? DECODE_THREAD_MIN_LOGS;
  const startDecodeThread = () => startThreadOfDecoder(decodeThreadNice(options.mode ?? "batch"));
  let decodedLogs = 0;
  let thread: ReturnType<typeof startDecodeThread> | undefined;
  return {
    async decode(answer) {
      if (thread === undefined && answerBytes(answer) >= DECODE_THREAD_MIN_ANSWER_BYTES)
        thread = startDecodeThread();
      if (thread !== undefined) return thread.decode(answer);
      // Decoding holds this thread: live messages received meanwhile go first.
      await yieldToEventLoop();
      const decoded = decodeWindowAnswer(answer);
      if (decoded.kind === "rows") decodedLogs += decoded.rows.count;
      if (decodedLogs >= threadAfterLogs) thread ??= startDecodeThread();
      return decoded;
    },
    async attribute(answer) {
      if (thread !== undefined) return thread.attribute(answer);
      await yieldToEventLoop();
      return attributeTransactionsAnswer(answer);
    },
    sender: () => thread?.sender,
    close: async () => thread?.close(),
  };
}

const answerBytes = (answer: WindowAnswer): number =>
  typeof answer.body === "string" ? answer.body.length : answer.body.byteLength;

function startThreadOfDecoder(nice: number) {
  const worker: Worker = startThread(
    import.meta.url,
    "windowDecoderThread",
    { nice } satisfies DecodeThreadData,
    {
      maxOldGenerationSizeMb: DECODE_THREAD_HEAP_MB,
      maxYoungGenerationSizeMb: DECODE_THREAD_YOUNG_MB,
    },
  );
  const calls = createThreadCalls<DecodeReply, DecodedWindow | AttributedAnswer>(worker, {
    thread: "decode thread",
    // A request the thread sent fails with the transport's error, rebuilt here.
    settle: (reply) => {
      if (reply.heldBack === true)
        return new HeldBackError(
          "not sent: the provider refused another request for its rate after this one was let go",
        );
      if (reply.failure !== undefined) return transportFailureError(reply.failure);
      return reply.decoded ?? new FatalError(`Could not decode a backfill window: ${reply.error}`);
    },
  });
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  let closing: Promise<void> | undefined;
  /** Posts a request; the answer body's bytes (a buffer of their own: chain/httpTransport.ts) move instead of being copied. */
  const send = (request: DecodeRequest, body: WindowAnswer["body"]) => {
    const movable =
      typeof body !== "string" &&
      body.byteOffset === 0 &&
      body.byteLength === body.buffer.byteLength &&
      body.buffer instanceof ArrayBuffer;
    worker.postMessage(request, movable ? [body.buffer as ArrayBuffer] : []);
  };
  /** Who is told when each request sent from the thread left, by id. */
  const leftBy = new Map<number, (at: number) => void>();
  worker.on("message", (message: DecodeReply | LeftNotice) => {
    if (!("left" in message)) return;
    leftBy.get(message.left)?.(message.at - performance.timeOrigin);
    leftBy.delete(message.left);
  });
  /** Posts a request that the thread sends itself; the shutdown (`signal`) aborts it there. */
  const callFromThread = (
    signal: AbortSignal,
    request: (id: number) => SendRequest,
    onLeft: ((at: number) => void) | undefined,
  ) => {
    let stopListening = () => {};
    let sentId = 0;
    return calls
      .call((id) => {
        sentId = id;
        if (onLeft !== undefined) leftBy.set(id, onLeft);
        const abort = () => worker.postMessage({ abort: id } satisfies DecodeRequest);
        signal.addEventListener("abort", abort, { once: true });
        stopListening = () => signal.removeEventListener("abort", abort);
        worker.postMessage(request(id));
        // Killed while the request waited for the rate limit: the listener never fires; abort it now.
        if (signal.aborted) abort();
      })
      .finally(() => {
        stopListening();
        leftBy.delete(sentId);
      });
  };
  return {
    decode: (answer: WindowAnswer) =>
      calls.call((id) => send({ id, answer }, answer.body)) as Promise<DecodedWindow>,
    attribute: (transactions: TransactionsAnswer) =>
      calls.call((id) =>
        send({ id, transactions }, transactions.body),
      ) as Promise<AttributedAnswer>,
    sender: {
      decode: (fetch, window, signal, onLeft) =>
        callFromThread(signal, (id) => ({ id, fetch, window }), onLeft) as Promise<DecodedWindow>,
      attribute: (fetch, batch, signal, onLeft) =>
        callFromThread(signal, (id) => ({ id, fetch, batch }), onLeft) as Promise<AttributedAnswer>,
    } satisfies ThreadSender,
    close(): Promise<void> {
      closing ??= (async () => {
        if (!calls.failed() && calls.waiting() === 0) worker.postMessage("close");
        else await worker.terminate();
        await exited;
      })();
      return closing;
    },
  };
}
