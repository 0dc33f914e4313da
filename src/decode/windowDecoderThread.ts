import { parentPort } from "node:worker_threads";
import { buffersToMove } from "./packedRows.js";
import { decodeWindowAnswer, type DecodedWindow, type WindowAnswer } from "./windowAnswer.js";

/** The decode thread: window answers in, decoded windows out, in any order (matched by id). */
export type DecodeRequest = { id: number; answer: WindowAnswer };
export type DecodeReply = { id: number; decoded?: DecodedWindow; error?: string };

parentPort!.on("message", (message: DecodeRequest | "close") => {
  if (message === "close") {
    parentPort!.close();
    return;
  }
  let decoded: DecodedWindow;
  try {
    decoded = decodeWindowAnswer(message.answer);
  } catch (error) {
    parentPort!.postMessage({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies DecodeReply);
    return;
  }
  // The rows move to the main thread (and on to the writer's) instead of being copied.
  const transfer = decoded.kind === "rows" ? buffersToMove(decoded.rows) : [];
  parentPort!.postMessage({ id: message.id, decoded } satisfies DecodeReply, transfer);
});
