import { FatalError } from "./base.js";

/** The service refused the request (4xx) or answered about another wallet: retrying cannot help. Exit 1. */
export class RegistrationRejectedError extends FatalError {
  override name = "RegistrationRejectedError";
  /** HTTP status, undefined when the refusal is ours (a mismatched answer). */
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}
