import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isLoopback } from "../config/parseFacilitator.js";
import { ConfigError } from "../errors/base.js";
import { asListenError } from "../ops/listenErrors.js";
import type { Logger } from "../ops/logger.js";
import {
  ANSWER_STATUS,
  settleForBuyer,
  settleRefused,
  verifyForBuyer,
  verifyRefused,
} from "./answers.js";
import type { Answer, Facilitator } from "./facilitator.js";
import { INVALID_REASONS as R, refuse } from "./invalidReasons.js";
import { namedNetwork, networkChainId, type SettleResponse, type VerifyResponse } from "./wire.js";

/** Time a client has to send its headers. */
const HEADERS_TIMEOUT_MS = 10_000;
/**
 * Connections open at once. Node closes any connection past it as soon as it is accepted (net.Server
 * maxConnections): the bound keeps a flood from exhausting file descriptors and memory, and sits
 * far above what the settles in flight of a busy facilitator hold (100 a second answered in 150 ms
 * keep about 15 open; a buyer's keep-alive socket idles out after Node's 5 s).
 */
const MAX_CONNECTIONS = 4_096;

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

/** The header that carries the id under which the operator's log keeps a request's detail. */
const REQUEST_ID_HEADER = "x-request-id";

export type FacilitatorServer = { url: string; close: () => Promise<void> };

/**
 * Serves the facilitator over HTTP as x402 v2 specifies (§7): GET /supported, POST /verify,
 * POST /settle, JSON in and out. Bodies are read up to `maxBodyBytes` (413 past it), slow clients
 * are cut off, and with a bearer token configured /verify and /settle answer 401 without it (the
 * comparison takes the same time whatever the guess).
 *
 * This is the wire boundary: a refusal's message as the facilitator built it may quote a node or
 * name an order, so it goes to the operator's log under a request id, and the buyer reads the
 * fixed line of its reason (answers.ts, buyerLine); the id travels back in X-Request-Id.
 */
export async function startFacilitatorServer(
  deps: { logger: Logger },
  facilitator: Facilitator,
  options: FacilitatorServerOptions,
): Promise<FacilitatorServer> {
  // parseFacilitator refuses such a config; this keeps any other caller from opening the relayer.
  if (options.authToken === undefined && !isLoopback(options.host))
    throw new ConfigError(
      "facilitator.authTokenEnv",
      `is required while the facilitator listens on ${options.host}: /verify and /settle would spend the relayer's gas for anyone`,
    );
  const logger = deps.logger.child({ component: "facilitator_server" });
  const expected = options.authToken === undefined ? undefined : digest(options.authToken);
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const requestId = String(response.getHeader(REQUEST_ID_HEADER));
      const detail = error instanceof Error ? error.message : String(error);
      logger.error({
        msg: "Failed to answer facilitator request",
        request_id: requestId,
        error: detail,
      });
      if (!response.headersSent)
        send(response, 500, {
          error: `internal error; the operator can look it up as request ${requestId}`,
        });
      else response.destroy();
    });
  });
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = options.settleTimeoutMs + HEADERS_TIMEOUT_MS;
  server.maxConnections = MAX_CONNECTIONS;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    response.setHeader(REQUEST_ID_HEADER, requestId);
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/supported") {
      if (request.method !== "GET" && request.method !== "HEAD")
        return send(response, 405, { error: "use GET" }, { allow: "GET, HEAD" });
      return send(response, 200, facilitator.supported());
    }
    if (path !== "/verify" && path !== "/settle")
      return send(response, 404, {
        error: "not found: the facilitator serves GET /supported, POST /verify, POST /settle",
      });
    if (request.method !== "POST")
      return send(response, 405, { error: "use POST" }, { allow: "POST" });
    if (expected !== undefined && !authorized(request.headers.authorization, expected))
      return send(
        response,
        401,
        { error: "missing or wrong bearer token" },
        { "www-authenticate": 'Bearer realm="flashindex facilitator"' },
      );
    const text = await readBody(request, options.maxBodyBytes);
    if (text === undefined)
      return send(
        response,
        413,
        { error: `request body larger than ${options.maxBodyBytes} bytes` },
        { connection: "close" },
      );
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      const refusal = refuse(R.invalidPayload, "the request body is not JSON");
      const status = ANSWER_STATUS.notJson;
      if (path === "/verify")
        return sendVerify(response, requestId, { status, body: verifyRefused(refusal) });
      return sendSettle(response, requestId, undefined, {
        status,
        body: settleRefused(refusal, options.network),
      });
    }
    if (path === "/verify") return sendVerify(response, requestId, await facilitator.verify(body));
    // A client that goes away does not stop the settlement: its transaction is stored and driven.
    return sendSettle(response, requestId, body, await facilitator.settle(body));
  }

  function sendVerify(
    response: ServerResponse,
    requestId: string,
    { status, body }: Answer<VerifyResponse>,
  ): void {
    if (!body.isValid)
      logRefusal("verify", requestId, {
        reason: body.invalidReason,
        detail: body.invalidMessage,
        payer: body.payer,
      });
    send(response, status, verifyForBuyer(body, requestId));
  }

  /** `request` is the parsed body, for the network it named (undefined when it was not JSON). */
  function sendSettle(
    response: ServerResponse,
    requestId: string,
    request: unknown,
    { status, body }: Answer<SettleResponse>,
  ): void {
    if (!body.success)
      logRefusal("settle", requestId, {
        reason: body.errorReason,
        detail: body.errorMessage,
        payer: body.payer,
      });
    const named = namedNetwork(request);
    const sameChain = named !== undefined && networkChainId(named) === networkChainId(body.network);
    send(response, status, settleForBuyer(body, requestId, { named, sameChain }));
  }

  /** The operator's copy of a refusal: the detail the buyer does not see, under the answer's request id. */
  function logRefusal(
    endpoint: "verify" | "settle",
    requestId: string,
    refusal: {
      reason?: string | undefined;
      detail?: string | undefined;
      payer?: string | undefined;
    },
  ): void {
    const { reason = null, detail = null, payer = null } = refusal;
    const entry = {
      msg: "Refused payment",
      request_id: requestId,
      endpoint,
      reason,
      detail,
      payer,
    };
    if (reason === R.unexpectedVerifyError || reason === R.unexpectedSettleError)
      logger.warn(entry);
    else logger.info(entry);
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

function send(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response
    .writeHead(status, {
      "content-type": "application/json",
      "cache-control": "no-store",
      "content-length": Buffer.byteLength(text),
      ...headers,
    })
    .end(text);
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

/**
 * `Authorization: Bearer <token>`. The scheme is matched case-insensitively (RFC 9110 §11.1: an
 * auth-scheme is a case-insensitive token), one or more spaces before the credentials (§11.4).
 * Digests of equal length are compared, so the time taken says nothing about the token.
 */
function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = header === undefined ? null : /^bearer +(\S+) *$/i.exec(header);
  return timingSafeEqual(digest(match?.[1] ?? ""), expected) && match !== null;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
