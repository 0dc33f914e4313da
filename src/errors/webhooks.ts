import { BaseError } from "./base.js";

/**
 * A webhook target that is, or resolved to, a loopback, link-local or private address while its
 * subscription does not set allowPrivateTargets. Never thrown out of a command: the sender records it
 * as the failed attempt's error (and retries, then parks, as for any failure).
 */
export class PrivateTargetError extends BaseError {
  override name = "PrivateTargetError";
  /** For node:net, which passes a lookup's error on as the socket's. */
  readonly code = "EWEBHOOKPRIVATE";
}
