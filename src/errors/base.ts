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

  /** This error or the first of its causes `fn` accepts; without `fn`, the innermost. */
  walk<T extends Error>(fn: (error: Error) => error is T): T | undefined;
  walk(fn?: (error: Error) => boolean): Error | undefined;
  walk(fn?: (error: Error) => boolean): Error | undefined {
    return walkCauses(this, fn);
  }
}

/**
 * Walks `error` and its causes, outermost first: returns the first `fn` accepts (undefined when
 * none does) or, without `fn`, the innermost. viem's `BaseError.walk` (wevm/viem
 * src/errors/base.ts), as a free function: what is walked is often not one of ours (a viem error
 * around ours, a plain Error from fetch or pg). Only Errors are walked: a `cause` that is not one
 * ends the chain, and so does a cause seen before (a cycle).
 */
export function walkCauses<T extends Error>(
  error: unknown,
  fn: (error: Error) => error is T,
): T | undefined;
export function walkCauses(error: unknown, fn?: (error: Error) => boolean): Error | undefined;
export function walkCauses(error: unknown, fn?: (error: Error) => boolean): Error | undefined {
  const seen = new Set<Error>();
  let innermost: Error | undefined;
  for (let e: unknown = error; e instanceof Error && !seen.has(e); e = e.cause) {
    if (fn?.(e) === true) return e;
    seen.add(e);
    innermost = e;
  }
  return fn === undefined ? innermost : undefined;
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

  constructor(
    shortMessage: string,
    options: BaseErrorOptions & { retryAfterMs?: number | undefined } = {},
  ) {
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
