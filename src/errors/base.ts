/**
 * The error vocabulary of flashindex. Every error a user can see is one of these:
 * the class decides the process exit code, `shortMessage` is the one line a user reads.
 */

export const EXIT_OK = 0;
export const EXIT_FATAL = 1;
export const EXIT_USAGE = 2;
/** sysexits.h EX_TEMPFAIL: try again later (a supervisor may restart us). */
export const EXIT_TEMPORARY = 75;

export type BaseErrorOptions = {
  details?: string | undefined;
  cause?: unknown;
};

export class BaseError extends Error {
  override name = "FlashindexError";
  readonly shortMessage: string;
  readonly details: string | undefined;
  readonly exitCode: number = EXIT_FATAL;

  constructor(shortMessage: string, options: BaseErrorOptions = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, {
      cause: options.cause,
    });
    this.shortMessage = shortMessage;
    this.details = options.details;
  }
}

/** A mistake in the configuration or on the command line: exit 2, one line, no stack trace. */
export class ConfigError extends BaseError {
  override name = "ConfigError";
  override readonly exitCode = EXIT_USAGE;
  readonly field: string;

  constructor(field: string, problem: string, options: BaseErrorOptions = {}) {
    super(`${field}: ${problem}`, options);
    this.field = field;
  }
}

export class UsageError extends BaseError {
  override name = "UsageError";
  override readonly exitCode = EXIT_USAGE;
}

/** Worth retrying: timeouts, 429, 5xx, resets, garbage answers. Exit 75 once retries run out. */
export class RetryableError extends BaseError {
  override name = "RetryableError";
  override readonly exitCode = EXIT_TEMPORARY;
  /** The wait the other side asked for before the next try (HTTP `Retry-After`), in ms; ops/withRetry.ts honours it. */
  readonly retryAfterMs: number | undefined;

  constructor(shortMessage: string, options: BaseErrorOptions & { retryAfterMs?: number | undefined } = {}) {
    super(shortMessage, options);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Retrying cannot help: method not found, invalid params, inconsistent data. Exit 1. */
export class FatalError extends BaseError {
  override name = "FatalError";
  override readonly exitCode = EXIT_FATAL;
}

/** Thrown into work that was interrupted by SIGINT/SIGTERM. Not a failure: exit 0. */
export class ShutdownError extends BaseError {
  override name = "ShutdownError";
  override readonly exitCode = EXIT_OK;
  constructor() {
    super("Shutting down");
  }
}

/** The exit code for anything thrown out of a command. */
export function exitCodeOf(error: unknown): number {
  return error instanceof BaseError ? error.exitCode : EXIT_FATAL;
}
