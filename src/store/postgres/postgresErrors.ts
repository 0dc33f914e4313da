import { BaseError, ConfigError, RetryableError } from "../../errors/base.js";
import { redactText } from "../../ops/redact.js";

/** SQLSTATE classes and codes that are the user's to fix (exit 2), not a passing outage. */
const USER_MISTAKES: Record<string, string> = {
  "28P01": "the password was refused",
  "28000": "the role may not connect",
  "3D000": "the database does not exist",
  "42501": "the role lacks a privilege flashindex needs",
};

/**
 * A connection or server error as flashindex reports it, credentials redacted: a refused login or a
 * missing database is a ConfigError (exit 2); an unreachable server a RetryableError (exit 75).
 * Our own errors pass through.
 */
export function asPostgresError(error: unknown, location: string): unknown {
  if (error instanceof BaseError) return error;
  const code = (error as { code?: string }).code;
  const message = redactText(error instanceof Error ? error.message : String(error));
  if (code !== undefined && code in USER_MISTAKES)
    return new ConfigError("database.url", `${location}: ${USER_MISTAKES[code]} (${message})`, {
      cause: error,
    });
  if (isOutage(code, message))
    return new RetryableError(`Could not reach the database ${location}: ${message}`, {
      cause: error,
    });
  return error;
}

/**
 * What may pass: a connection refused, cut or timed out (Node's socket codes, SQLSTATE class 08),
 * a server shutting down or starting (57P01–57P03). Note: node-postgres reports a connection closed
 * under it and a connect timeout with no code, only these messages.
 */
function isOutage(code: string | undefined, message: string): boolean {
  if (
    code !== undefined &&
    (code.startsWith("08") ||
      [
        "57P01",
        "57P02",
        "57P03",
        "ECONNREFUSED",
        "ECONNRESET",
        "ETIMEDOUT",
        "ENOTFOUND",
        "EAI_AGAIN",
        "EPIPE",
      ].includes(code))
  )
    return true;
  return (
    code === undefined &&
    /Connection terminated|timeout expired|timeout exceeded when trying to connect/i.test(message)
  );
}
