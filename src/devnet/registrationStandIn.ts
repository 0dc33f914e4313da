import { randomInt } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getAddress, isAddress, keccak256, toBytes } from "viem";
import { BUILDER_CODES_PATH } from "../attribution/registrationClient.js";

/** Request bodies over this are refused with 413 (the real one's limit is unknown; a wallet is ~60 bytes). */
const MAX_REQUEST_BYTES = 16 * 1024;
const CODE_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

export type RegistrationStandInOptions = {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Answer Base's registration-script shape `{ builder_code, wallet_address, usage_instructions }`. */
  snakeCase?: boolean;
  /** Delay before every answer, in ms (to make clients time out). */
  latencyMs?: number;
  /**
   * With a seed, a wallet's code is derived from the seed and the wallet (the same on every run with
   * that seed); without one, it is random but stable for the server's lifetime.
   */
  seed?: string;
};

/** One request the stand-in received; `status` is 0 until it has been answered. */
export type RecordedCall = { method: string; path: string; status: number };

export type RegistrationStandIn = {
  /** Base URL to configure as `registration.baseUrl`. */
  url: string;
  /** Every request received, in order (faulted and refused ones included). */
  readonly calls: readonly RecordedCall[];
  /** Codes handed out: lower-case wallet → code. */
  readonly codes: ReadonlyMap<string, string>;
  /** The wallet's code, handed out now if it has none yet (what a registration would answer). */
  codeFor: (wallet: string) => string;
  /** The next `times` requests are answered `status` with `body` (default: a JSON error) instead of served. */
  failNext: (status: number, times?: number, body?: string) => void;
  setLatencyMs: (ms: number) => void;
  setSnakeCase: (snakeCase: boolean) => void;
  close: () => Promise<void>;
};

/**
 * A local stand-in for the builder-code registration API (`api.base.dev`) as Base
 * documents it: `POST /v1/agents/builder-codes` with `{ walletAddress }` (Base's script's
 * `wallet_address` is accepted too), idempotent per wallet (case-insensitive), codes `bc_` + 8 of
 * [0-9a-z], random but stable for the server's lifetime. 400 with a JSON error for a malformed address
 * or body, 404 for other paths, 405 for other methods. Status 200 on success (the real one is undocumented).
 */
export async function startRegistrationStandIn(
  options: RegistrationStandInOptions = {},
): Promise<RegistrationStandIn> {
  const host = options.host ?? "127.0.0.1";
  let snakeCase = options.snakeCase ?? false;
  let latencyMs = options.latencyMs ?? 0;
  const faults: Array<{ status: number; body: string | undefined }> = [];
  const calls: RecordedCall[] = [];
  const codes = new Map<string, string>();
  const usedCodes = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();

  function codeFor(wallet: string): string {
    const key = wallet.toLowerCase();
    const known = codes.get(key);
    if (known !== undefined) return known;
    let code = options.seed === undefined ? randomCode() : seededCode(options.seed, key);
    while (usedCodes.has(code)) code = randomCode();
    codes.set(key, code);
    usedCodes.add(code);
    return code;
  }

  function serve(
    method: string,
    path: string,
    body: string | undefined,
  ): { status: number; body: string; headers?: Record<string, string> } {
    const fault = faults.shift();
    if (fault !== undefined)
      return {
        status: fault.status,
        body: fault.body ?? JSON.stringify({ error: `injected fault (HTTP ${fault.status})` }),
      };
    if (path !== BUILDER_CODES_PATH)
      return { status: 404, body: JSON.stringify({ error: "not found" }) };
    if (method !== "POST")
      return {
        status: 405,
        body: JSON.stringify({ error: "method not allowed" }),
        headers: { allow: "POST" },
      };
    if (body === undefined)
      return { status: 413, body: JSON.stringify({ error: "request body too large" }) };
    let request: unknown;
    try {
      request = JSON.parse(body);
    } catch {
      return badRequest("request body must be a JSON object with walletAddress");
    }
    if (typeof request !== "object" || request === null || Array.isArray(request))
      return badRequest("request body must be a JSON object with walletAddress");
    const fields = request as Record<string, unknown>;
    const wallet = fields.walletAddress ?? fields.wallet_address;
    if (wallet === undefined) return badRequest("walletAddress is required");
    if (typeof wallet !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(wallet))
      return badRequest("invalid walletAddress: expected 0x and 40 hex digits");
    if (!isAddress(wallet, { strict: true }))
      return badRequest("invalid walletAddress: bad EIP-55 checksum");
    const code = codeFor(wallet);
    const walletAddress = getAddress(wallet);
    const answer = snakeCase
      ? {
          builder_code: code,
          wallet_address: walletAddress,
          usage_instructions: `Append the ERC-8021 suffix for "${code}" to your transactions' calldata.`,
        }
      : { builderCode: code, walletAddress };
    return { status: 200, body: JSON.stringify(answer) };
  }

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const call: RecordedCall = {
      method: request.method ?? "",
      path: (request.url ?? "/").split("?")[0] ?? "/",
      status: 0,
    };
    calls.push(call);
    readBody(request, MAX_REQUEST_BYTES).then(
      (body) => {
        const answer = serve(call.method, call.path, body);
        const send = () => {
          call.status = answer.status;
          response
            .writeHead(answer.status, { "content-type": "application/json", ...answer.headers })
            .end(answer.body);
        };
        if (latencyMs <= 0) return send();
        const timer = setTimeout(() => {
          timers.delete(timer);
          send();
        }, latencyMs);
        timers.add(timer);
      },
      () => response.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    calls,
    codes,
    codeFor,
    failNext: (status, times = 1, body) => {
      for (let i = 0; i < times; i++) faults.push({ status, body });
    },
    setLatencyMs: (ms) => {
      latencyMs = ms;
    },
    setSnakeCase: (value) => {
      snakeCase = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function randomCode(): string {
  return `bc_${Array.from({ length: 8 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join("")}`;
}

/** `bc_` + 8 characters of [0-9a-z] taken from keccak256(seed ‖ wallet): the same wallet, the same code. */
function seededCode(seed: string, wallet: string): string {
  const digest = toBytes(keccak256(toBytes(`${seed}:${wallet}`)));
  return `bc_${Array.from(digest.subarray(0, 8), (byte) => CODE_ALPHABET[byte % CODE_ALPHABET.length]).join("")}`;
}

/** The request body as text, or undefined when it exceeds `maxBytes` (the rest is drained unread). */
function readBody(request: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= maxBytes) chunks.push(chunk);
    });
    request.on("end", () =>
      resolve(size > maxBytes ? undefined : Buffer.concat(chunks).toString("utf8")),
    );
    request.on("error", reject);
  });
}

function badRequest(error: string) {
  return { status: 400, body: JSON.stringify({ error }) };
}
