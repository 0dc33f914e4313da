import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { asListenError } from "../ops/listenErrors.js";
import type { Logger } from "../ops/logger.js";
import { ANSWER_STATUS, settleRefused, verifyRefused } from "./answers.js";
import type { Facilitator } from "./facilitator.js";
import { INVALID_REASONS as R, refuse } from "./invalidReasons.js";

/** Time a client has to send its headers. */
const HEADERS_TIMEOUT_MS = 10_000;
/** Connections served at once; more wait in the kernel's backlog. */
const MAX_CONNECTIONS = 512;

export type FacilitatorServerOptions = {
  host: string;
  port: number;
  /** Required as `Authorization: Bearer <token>` on /verify and /settle when set. */
  authToken: string | undefined;
  maxBodyBytes: number;
  /** Longest a /settle may take; the request timeout sits a little above it. */
  settleTimeoutMs: number;
  /** The CAIP-2 network, for the bodies of refusals made before parsing. */
  network: string;
};

export type FacilitatorServer = { url: string; close: () => Promise<void> };

/**
 * Serves the facilitator over HTTP as x402 v2 specifies (§7): GET /supported, POST /verify,
 * POST /settle, JSON in and out. Bodies are read up to `maxBodyBytes` (413 past it), slow clients
 * are cut off, and with a bearer token configured /verify and /settle answer 401 without it (the
 * comparison takes the same time whatever the guess).
 */
export async function startFacilitatorServer(deps: { logger: Logger }, facilitator: Facilitator, options: FacilitatorServerOptions): Promise<FacilitatorServer> {
  const logger = deps.logger.child({ component: "facilitator_server" });
  const expected = options.authToken === undefined ? undefined : digest(options.authToken);
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      logger.error({ msg: "Failed to answer facilitator request", error: error instanceof Error ? error.message : String(error) });
      if (!response.headersSent) send(response, 500, { error: "internal error" });
      else response.destroy();
    });
  });
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = options.settleTimeoutMs + HEADERS_TIMEOUT_MS;
  server.maxConnections = MAX_CONNECTIONS;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/supported") {
      if (request.method !== "GET" && request.method !== "HEAD") return send(response, 405, { error: "use GET" }, { allow: "GET, HEAD" });
      return send(response, 200, facilitator.supported());
    }
    if (path !== "/verify" && path !== "/settle") return send(response, 404, { error: "not found: the facilitator serves GET /supported, POST /verify, POST /settle" });
    if (request.method !== "POST") return send(response, 405, { error: "use POST" }, { allow: "POST" });
    if (expected !== undefined && !authorized(request.headers.authorization, expected))
      return send(response, 401, { error: "missing or wrong bearer token" }, { "www-authenticate": 'Bearer realm="flashindex facilitator"' });
    const text = await readBody(request, options.maxBodyBytes);
    if (text === undefined) return send(response, 413, { error: `request body larger than ${options.maxBodyBytes} bytes` }, { connection: "close" });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      const refusal = refuse(R.invalidPayload, "the request body is not JSON");
      return send(response, ANSWER_STATUS.notJson, path === "/verify" ? verifyRefused(refusal) : settleRefused(refusal, options.network));
    }
    if (path === "/verify") {
      const answer = await facilitator.verify(body);
      return send(response, answer.status, answer.body);
    }
    // A client that goes away does not stop the settlement: its transaction is stored and driven.
    const answer = await facilitator.settle(body);
    return send(response, answer.status, answer.body);
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    throw asListenError(error, { host: options.host, port: options.port, key: "facilitator.port" });
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", "content-length": Buffer.byteLength(text), ...headers }).end(text);
}

/** The body as text, or undefined past `maxBytes` (the rest is not read). */
async function readBody(request: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const declared = Number(request.headers["content-length"] ?? Number.NaN);
  if (declared > maxBytes) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** Compares digests of equal length, so the time taken says nothing about the token. */
function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer (.+)$/.exec(header);
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
