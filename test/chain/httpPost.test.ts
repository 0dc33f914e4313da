import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { postJson, readAnswer } from "../../src/chain/httpPost.js";

const ANSWER = Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "x".repeat(100_000) }));

/** Each path answers one way; every request's socket is remembered. */
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  "/plain": (_req, res) => res.writeHead(200, { "content-length": ANSWER.length }).end(ANSWER),
  "/chunked": (_req, res) => {
    res.writeHead(200);
    res.write(ANSWER.subarray(0, 50_000));
    res.end(ANSWER.subarray(50_000));
  },
  "/gzip": (_req, res) => res.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync(ANSWER)),
  "/deflate": (_req, res) =>
    res.writeHead(200, { "content-encoding": "deflate" }).end(deflateSync(ANSWER)),
  "/br": (_req, res) =>
    res.writeHead(200, { "content-encoding": "br" }).end(brotliCompressSync(ANSWER)),
  "/bad-gzip": (_req, res) =>
    res.writeHead(200, { "content-encoding": "gzip" }).end(Buffer.from("not gzip at all")),
  "/zstd": (_req, res) => res.writeHead(200, { "content-encoding": "zstd" }).end(ANSWER),
  "/cut": (_req, res) => {
    res.writeHead(200, { "content-length": ANSWER.length });
    res.write(ANSWER.subarray(0, 1_000));
    setTimeout(() => res.socket?.destroy(), 20);
  },
  "/echo-headers": (req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(req.headers)),
};
const sockets = new Set<Socket>();
const server = createServer((req, res) => {
  sockets.add(req.socket);
  req.resume();
  req.on("end", () => routes[req.url ?? ""]!(req, res));
});
let base = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const fetchAnswer = async (path: string, maxBytes = 1_000_000) =>
  readAnswer(await postJson(`${base}${path}`, "{}", new AbortController().signal), maxBytes);

describe("postJson() and readAnswer()", () => {
  test("reads a plain answer into a buffer of its own, whole, with or without a length", async () => {
    for (const path of ["/plain", "/chunked"]) {
      const { bytes, truncated } = await fetchAnswer(path);
      expect(truncated).toBe(false);
      expect(bytes.equals(ANSWER)).toBe(true);
      expect([bytes.byteOffset, bytes.buffer.byteLength]).toEqual([0, ANSWER.length]);
    }
  });

  test("asks for compressed answers and decompresses gzip, deflate and brotli; refuses an encoding it cannot read", async () => {
    const { bytes } = await fetchAnswer("/echo-headers");
    expect(JSON.parse(bytes.toString())).toMatchObject({
      "accept-encoding": "gzip, deflate, br",
      "content-type": "application/json",
    });
    for (const path of ["/gzip", "/deflate", "/br"]) {
      const answer = await fetchAnswer(path);
      expect(answer.bytes.equals(ANSWER)).toBe(true);
      expect(answer.bytes.buffer.byteLength).toBe(ANSWER.length);
    }
    await expect(fetchAnswer("/zstd")).rejects.toThrow(/content-encoding "zstd" is not supported/);
    await expect(fetchAnswer("/bad-gzip")).rejects.toThrow(/incorrect header check/);
  });

  test("stops at the cap: by the declared length before reading, or while streaming, after decompression too", async () => {
    for (const path of ["/plain", "/chunked", "/gzip"])
      expect(await fetchAnswer(path, 60_000)).toEqual({ bytes: Buffer.alloc(0), truncated: true });
  });

  test("an answer cut off before its end is an error, never a shorter answer", async () => {
    await expect(fetchAnswer("/cut")).rejects.toThrow(
      /closed before the answer ended|aborted|ECONNRESET/,
    );
  });

  test("keeps the connection alive between requests", async () => {
    sockets.clear();
    await fetchAnswer("/plain");
    await fetchAnswer("/plain");
    expect(sockets.size).toBe(1);
  });

  test("the signal aborts a request", async () => {
    const controller = new AbortController();
    controller.abort(new Error("shutting down"));
    await expect(postJson(`${base}/plain`, "{}", controller.signal)).rejects.toThrow();
  });
});
