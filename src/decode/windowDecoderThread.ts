import { parentPort } from "node:worker_threads";
import { buffersToMove } from "./packedRows.js";
import { attributeTransactionsAnswer, type AttributedAnswer, type TransactionsAnswer } from "./transactionsAnswer.js";
import { decodeWindowAnswer, type DecodedWindow, type WindowAnswer } from "./windowAnswer.js";

/** The decode thread: window answers (or their transactions' answers) in, decoded windows (or packed attribution) out, in any order (matched by id). */
export type DecodeRequest = { id: number; answer: WindowAnswer } | { id: number; transactions: TransactionsAnswer };
export type DecodeReply = { id: number; decoded?: DecodedWindow | AttributedAnswer; error?: string };

parentPort!.on("message", (message: DecodeRequest | "close") => {
  if (message === "close") {
    parentPort!.close();
    return;
  }
  let decoded: DecodedWindow | AttributedAnswer;
  try {
    decoded = "answer" in message ? decodeWindowAnswer(message.answer) : attributeTransactionsAnswer(message.transactions);
  } catch (error) {
    parentPort!.postMessage({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies DecodeReply);
    return;
  }
  // The rows move to the main thread (and on to the writer's) instead of being copied.
  const transfer = decoded.kind === "rows" ? buffersToMove(decoded.rows) : [];
  parentPort!.postMessage({ id: message.id, decoded } satisfies DecodeReply, transfer);
});
