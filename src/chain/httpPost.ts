import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/**
 * JSON-RPC over Node's own HTTP client, not `fetch`: fetch (undici's WHATWG streams: a promise and
 * a view per chunk) cost the main thread about three times the CPU per answer and full garbage
 * collections, which held up pre-confirmations while a backfill ran (`node-http-not-fetch` in
 * scripts/bench/results/measurements.csv).
 *
 * Connections are kept alive and reused, as fetch did; idle ones do not keep the process alive.
 * Answers may come compressed (gzip, deflate, br), as fetch accepted them.
 */
const AGENTS = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
} as const;

/** POSTs `body` as JSON; resolves with the response once its headers arrive. `signal` aborts it at any point. */
export function postJson(
  url: string,
  body: string,
  signal?: AbortSignal,
): Promise<IncomingMessage> {
  const target = new URL(url);
  const protocol = target.protocol === "https:" ? "https:" : "http:";
  const send = protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const request = send(
      target,
      {
        method: "POST",
        agent: AGENTS[protocol],
        signal,
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "accept-encoding": "gzip, deflate, br",
          "content-length": Buffer.byteLength(body),
        },
      },
      resolve,
    );
    request.on("error", reject);
    request.end(body);
  });
}

/**
 * Reads at most `maxBytes` of an answer's body (after decompression), into a buffer of its own
 * (never a slice of Node's shared pool), so it can be transferred to another thread. Past the cap
 * the rest is dropped unread and `truncated` is set: a hostile or runaway answer cannot exhaust memory.
 */
export function readAnswer(
  response: IncomingMessage,
  maxBytes: number,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase();
  const declared = Number(response.headers["content-length"] ?? Number.NaN);
  if (declared > maxBytes && (encoding === undefined || encoding === "identity")) {
    response.destroy();
    return Promise.resolve({ bytes: Buffer.alloc(0), truncated: true });
  }
  let stream: Readable;
  try {
    stream = decoded(response, encoding);
  } catch (error) {
    response.destroy();
    return Promise.reject(error);
  }
  return new Promise((resolve, reject) => {
    // A plain body of known length is read straight into its own buffer; otherwise chunks, joined at the end.
    const exact =
      stream === response && Number.isSafeInteger(declared) && declared >= 0
        ? Buffer.from(new ArrayBuffer(declared))
        : undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      outcome();
    };
    stream.on("data", (chunk: Buffer) => {
      if (settled) return;
      const over = size + chunk.length > maxBytes;
      if (over || (exact !== undefined && size + chunk.length > exact.length)) {
        response.destroy();
        if (stream !== response) stream.destroy();
        settle(() =>
          over
            ? resolve({ bytes: Buffer.alloc(0), truncated: true })
            : reject(new Error(`the answer is longer than its content-length (${declared})`)),
        );
        return;
      }
      if (exact !== undefined) chunk.copy(exact, size);
      else chunks.push(chunk);
      size += chunk.length;
    });
    stream.once("end", () =>
      settle(() => {
        if (exact !== undefined && size !== exact.length)
          return reject(new Error(`the answer ended after ${size} of its ${exact.length} bytes`));
        resolve({ bytes: exact ?? joined(chunks, size), truncated: false });
      }),
    );
    stream.on("error", (error) => settle(() => reject(error)));
    response.on("error", (error) => settle(() => reject(error)));
    // Closed before the whole message arrived (a decompressed answer may still be flushing after a complete one).
    response.once("close", () => {
      if (!response.complete)
        settle(() => reject(new Error("the connection closed before the answer ended")));
    });
  });
}

function decoded(response: IncomingMessage, encoding: string | undefined): Readable {
  switch (encoding) {
    case undefined:
    case "identity":
      return response;
    case "gzip":
    case "x-gzip":
      return response.pipe(createGunzip());
    case "deflate":
      return response.pipe(createInflate());
    case "br":
      return response.pipe(createBrotliDecompress());
    default:
      throw new Error(`the answer's content-encoding "${encoding}" is not supported`);
  }
}

function joined(chunks: readonly Buffer[], size: number): Buffer {
  const bytes = Buffer.from(new ArrayBuffer(size));
  let at = 0;
  for (const chunk of chunks) {
    chunk.copy(bytes, at);
    at += chunk.length;
  }
  return bytes;
}
