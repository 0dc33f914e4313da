import { parentPort, workerData } from "node:worker_threads";
import {
  createHttpTransport,
  describeTransportFailure,
  type AnswerBody,
  type HttpTransport,
  type TransportFailure,
} from "../../chain/httpTransport.js";
import type { OutgoingRequest } from "../../chain/rpcClient.js";
import { serveThreadMessages } from "../../ops/threadEntry.js";
import { niceThisThread } from "../../ops/threadNice.js";
import { buffersToMove } from "../../rows/packedRows.js";
import {
  attributeTransactionsAnswer,
  type AttributedAnswer,
  type TransactionsAnswer,
  type TransactionsContext,
} from "./transactionsAnswer.js";
import { decodeWindowAnswer } from "./windowAnswer.js";
import { attributionToMove } from "../../rows/packedAttribution.js";
import type { DecodedWindow, WindowAnswer, WindowContext } from "../../decode/decodedWindow.js";

/**
 * The decode thread: window answers (or their transactions' answers) in, decoded windows (or packed
 * attribution) out, in any order (matched by id). A request with `fetch` is sent from here first
 * (its answer's bytes never reach the main thread); `abort` cancels one (a shutdown).
 */
export type DecodeRequest =
  | { id: number; answer: WindowAnswer }
  | { id: number; transactions: TransactionsAnswer }
  | { id: number; fetch: OutgoingRequest; window: WindowContext }
  | { id: number; fetch: OutgoingRequest; batch: TransactionsContext }
  | { abort: number };
/** A request the thread sends itself before decoding its answer. */
export type SendRequest = Extract<DecodeRequest, { fetch: OutgoingRequest }>;
/** `heldBack`: the request was not sent, the provider having refused another since it was let go (HeldBackError). */
export type DecodeReply = {
  id: number;
  decoded?: DecodedWindow | AttributedAnswer;
  failure?: TransportFailure;
  error?: string;
  heldBack?: true;
};
/**
 * Posted as a request this thread sends leaves (before its reply): when, in ms since the Unix epoch
 * at performance's resolution (threads' performance.now() clocks start apart). It has no `id`, so
 * the calls' replies never take it for one.
 */
export type LeftNotice = { left: number; at: number };

export type DecodeThreadData = { nice: number };

niceThisThread((workerData as DecodeThreadData).nice);

/** Requests being sent from here, by id, for `abort`. */
const sending = new Map<number, AbortController>();
/** One transport per settings (in practice one): its connections are kept alive across windows. */
const transports = new Map<string, HttpTransport>();

serveThreadMessages<DecodeRequest>((message) => {
  if ("abort" in message) {
    sending.get(message.abort)?.abort();
    return;
  }
  if ("fetch" in message) {
    void sendThenDecode(message);
    return;
  }
  reply(message.id, () =>
    "answer" in message
      ? decodeWindowAnswer(message.answer)
      : attributeTransactionsAnswer(message.transactions),
  );
});

async function sendThenDecode(message: SendRequest): Promise<void> {
  const { id, fetch } = message;
  // Let go before the provider refused another request, and not sent yet (this thread was busy): the provider is over its limit now.
  if (fetch.refusals !== undefined && Atomics.load(fetch.refusals, 0) !== fetch.refusalsSeen) {
    parentPort!.postMessage({ id, heldBack: true } satisfies DecodeReply);
    return;
  }
  const controller = new AbortController();
  sending.set(id, controller);
  let body: AnswerBody;
  try {
    const transport = transportFor(fetch);
    parentPort!.postMessage({
      left: id,
      at: performance.timeOrigin + performance.now(),
    } satisfies LeftNotice);
    body = await transport(fetch.url, fetch.body, controller.signal, fetch.timeoutMs);
  } catch (error) {
    let answer: DecodeReply;
    try {
      answer = { id, failure: describeTransportFailure(error, controller.signal.aborted) };
    } catch (unexpected) {
      answer = { id, error: errorText(unexpected) };
    }
    parentPort!.postMessage(answer);
    return;
  } finally {
    sending.delete(id);
  }
  const answered = { body, endpoint: fetch.endpoint };
  reply(id, () =>
    "window" in message
      ? decodeWindowAnswer({ ...message.window, ...answered, id: fetch.id })
      : attributeTransactionsAnswer({ ...message.batch, ...answered, firstId: fetch.id }),
  );
}

function transportFor(request: OutgoingRequest): HttpTransport {
  const key = `${request.transport.timeoutMs}/${request.transport.maxResponseBytes}`;
  let transport = transports.get(key);
  if (transport === undefined)
    transports.set(key, (transport = createHttpTransport(request.transport)));
  return transport;
}

/** Posts what `work` made (its rows moved, not copied), or the error it threw. */
function reply(id: number, work: () => DecodedWindow | AttributedAnswer): void {
  let decoded: DecodedWindow | AttributedAnswer;
  try {
    decoded = work();
  } catch (error) {
    parentPort!.postMessage({ id, error: errorText(error) } satisfies DecodeReply);
    return;
  }
  // The rows and the attribution move to the main thread (and on to the writer's) instead of being copied.
  let transfer: ArrayBuffer[] = [];
  if (decoded.kind === "rows") transfer = buffersToMove(decoded.rows);
  else if (decoded.kind === "attributed") {
    const moved = attributionToMove(decoded.attribution);
    decoded = { ...decoded, attribution: moved.packed };
    transfer = moved.transfer;
  }
  parentPort!.postMessage({ id, decoded } satisfies DecodeReply, transfer);
}

const errorText = (error: unknown): string =>
  error instanceof Error ? (error.stack ?? error.message) : String(error);
