import { BaseError, EXIT_TEMPORARY } from "./base.js";

/**
 * Another process took this database's writer role while this one still wrote (its lock's connection
 * died unnoticed): it stops at once, before its transaction writes anything. Exit 75: a supervisor may
 * restart it, as a standby.
 */
export class WriterEpochLostError extends BaseError {
  override name = "WriterEpochLostError";
  override readonly exitCode = EXIT_TEMPORARY;
}
