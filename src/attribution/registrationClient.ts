import type { Address } from "viem";
import { checksum } from "ox/Address";
import { readCappedBody } from "../ops/readCappedBody.js";
import { readAddress } from "../config/fields.js";
import { ConfigError, RetryableError, UsageError } from "../errors/base.js";
import { redactText, redactUrl } from "../ops/redact.js";
import { parseRetryAfterMs } from "../ops/withRetry.js";

/** Path of the builder-code registration endpoint under the API's base URL (docs/attribution.md, "Builder-code registration"). */
export const BUILDER_CODES_PATH = "/v1/agents/builder-codes";
/** Answers are read up to this many bytes; the service is not ours and its bodies are untrusted. */
export const MAX_REGISTRATION_RESPONSE_BYTES = 64 * 1024;
/** An error message quoted from an answer is cut to this many characters. */
const MAX_QUOTED_CHARS = 200;

/** Codes the service generates: `bc_` and 8 of [0-9a-z]. */
const GENERATED_CODE = /^bc_[0-9a-z]{8}$/;
/** Custom codes the registry accepts (e.g. `baseapp`): 1–32 of [a-z0-9_]. Generated codes match this too. */
const CUSTOM_CODE = /^[a-z0-9_]{1,32}$/;

export type Registration = { walletAddress: Address; builderCode: string };

export type RegistrationClient = {
  /**
   * Registers `wallet` (idempotent: the same wallet always gets the same code) and returns its code.
   * Throws UsageError for a malformed wallet (before any request), RetryableError for what may pass
   * (timeouts, refused connections, 408/429/5xx, a 2xx without a usable code), RegistrationRejectedError
   * for other 4xx and answers about another wallet, and ShutdownError when `signal` aborts.
   */
  register: (wallet: string, options?: { signal?: AbortSignal }) => Promise<Registration>;
};

export { RegistrationRejectedError } from "../errors/registration.js";
import { RegistrationRejectedError } from "../errors/registration.js";
import { requestDeadline } from "../ops/requestDeadline.js";

/** Whether `code` has the form of a builder code (generated `bc_…` or custom). */
export function isBuilderCode(code: string): boolean {
  return GENERATED_CODE.test(code) || CUSTOM_CODE.test(code);
}

/**
 * Validates a wallet address given by a user: 0x + 40 hex digits, and a valid EIP-55 checksum when
 * mixed case. Returns it checksummed; throws UsageError naming `name` (exit 2).
 */
export function parseWallet(name: string, value: unknown): Address {
  try {
    return readAddress(name, value);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.shortMessage);
    throw error;
  }
}

/** HTTP client for the builder-code registration API (`POST {baseUrl}/v1/agents/builder-codes`). */
export function createRegistrationClient(options: {
  baseUrl: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}): RegistrationClient {
  const doFetch = options.fetch ?? fetch;
  const url = `${options.baseUrl.replace(/\/+$/, "")}${BUILDER_CODES_PATH}`;
  // The base URL may carry a key in its path or query: never print it.
  const where = `Registration API ${redactUrl(options.baseUrl)}`;

  return {
    async register(wallet, { signal } = {}) {
      const walletAddress = parseWallet("walletAddress", wallet);
      const deadline = requestDeadline(options.timeoutMs, signal);
      const failure = (error: unknown) => {
        if (signal?.aborted)
          return signal.reason instanceof Error ? signal.reason : new Error("aborted");
        if (deadline.timedOut())
          return new RetryableError(`${where} timed out after ${options.timeoutMs} ms`);
        return new RetryableError(`${where} unreachable: ${causeOf(error)}`, { cause: error });
      };

      let response: Response;
      let body: { text: string; truncated: boolean };
      try {
        response = await doFetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ walletAddress }),
          signal: deadline.signal,
        });
        body = await readCappedBody(response, MAX_REGISTRATION_RESPONSE_BYTES);
      } catch (error) {
        throw failure(error);
      } finally {
        deadline.dispose();
      }

      const status = response.status;
      if (status < 200 || status > 299) {
        const quoted = body.truncated ? undefined : quoteErrorMessage(body.text);
        const message = `${where} answered HTTP ${status}${quoted === undefined ? "" : `: ${quoted}`}`;
        // 408 and 429 say "later"; 5xx is the service's own trouble. Other 4xx: our request is refused.
        if (status === 408 || status === 429 || status >= 500)
          throw new RetryableError(message, {
            retryAfterMs: parseRetryAfterMs(response.headers.get("retry-after") ?? undefined),
          });
        throw new RegistrationRejectedError(message, status);
      }
      // A 2xx that carries no usable code is a failure (success and error bodies are undocumented). It is treated as retryable,
      // like other garbage answers: the call is idempotent, and a proxy's error page or a half-deployed
      // service passes. The daemon's backoff keeps a persistent one cheap.
      if (body.truncated)
        throw new RetryableError(
          `${where} answered HTTP ${status} with a body over ${MAX_REGISTRATION_RESPONSE_BYTES / 1024} KiB`,
        );
      return parseAnswer(body.text, walletAddress, `${where} answered HTTP ${status}`);
    },
  };
}

/**
 * Reads a registration answer. Two shapes are in use (docs/attribution.md): the docs'
 * `{ builderCode, walletAddress }` and Base's registration script's
 * `{ builder_code, wallet_address, usage_instructions }`.
 */
function parseAnswer(text: string, requested: Address, prefix: string): Registration {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RetryableError(
      `${prefix} with a body that is not JSON${text.trim() === "" ? " (empty)" : ""}`,
    );
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new RetryableError(`${prefix} with JSON that is not an object`);
  const answer = json as Record<string, unknown>;
  const codes = [answer.builderCode, answer.builder_code].filter(
    (value) => value !== undefined && value !== null,
  );
  const code = codes[0];
  if (code === undefined)
    throw new RetryableError(
      `${prefix} without a builder code (neither builderCode nor builder_code)`,
    );
  if (typeof code !== "string" || !isBuilderCode(code))
    throw new RetryableError(
      `${prefix} with a malformed builder code ${quote(typeof code === "string" ? code : JSON.stringify(code))}`,
    );
  if (codes.length > 1 && codes[1] !== code)
    throw new RetryableError(`${prefix} with two different builder codes`);

  const echoed = answer.walletAddress ?? answer.wallet_address;
  if (echoed !== undefined && echoed !== null) {
    if (typeof echoed !== "string")
      throw new RetryableError(`${prefix} with a wallet address that is not a string`);
    // The code belongs to the echoed wallet: storing it for ours would attribute someone else's code.
    if (echoed.toLowerCase() !== requested.toLowerCase())
      throw new RegistrationRejectedError(
        `${prefix} with the code of another wallet (${quote(echoed)}, asked for ${requested})`,
      );
  }
  return { walletAddress: checksum(requested), builderCode: code };
}

/** The `message` or `error` of a JSON error body (`error` may be an object with a `message`), quoted safely. */
function quoteErrorMessage(text: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null) return undefined;
  const body = json as Record<string, unknown>;
  const nested =
    typeof body.error === "object" && body.error !== null
      ? (body.error as Record<string, unknown>).message
      : undefined;
  const message = [body.message, body.error, nested, body.detail].find(
    (value): value is string => typeof value === "string" && value.trim() !== "",
  );
  return message === undefined ? undefined : quote(message);
}

/** One printable line of at most MAX_QUOTED_CHARS: control characters (newlines, terminal escapes) become spaces. */
function quote(text: string): string {
  const line = text
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return JSON.stringify(
    line.length > MAX_QUOTED_CHARS ? `${line.slice(0, MAX_QUOTED_CHARS)}…` : line,
  );
}

function causeOf(error: unknown): string {
  const inner = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (inner as NodeJS.ErrnoException | undefined)?.code;
  const message = inner instanceof Error ? inner.message : String(inner);
  return redactText(code !== undefined && !message.includes(code) ? `${code} ${message}` : message);
}
