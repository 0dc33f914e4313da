import { BaseError, EXIT_TEMPORARY } from "./base.js";

/**
 * The connection holding this database's writer lock ended (the server restarted, a network cut, an
 * administrator's pg_terminate_backend): Postgres released the lock with it, so a standby may already
 * write. The process stops before its next write. Exit 75, as for a lost writer epoch: a supervisor
 * may restart it, and it then waits for the lock like any standby.
 */
export class WriterLockLostError extends BaseError {
  override name = "WriterLockLostError";
  override readonly exitCode = EXIT_TEMPORARY;

  /** `location` names the database (a redacted postgres URL with its schema). */
  constructor(location: string) {
    super(
      `Lost the connection holding the writer lock of ${location}: stopping rather than writing beside another writer`,
    );
  }
}
