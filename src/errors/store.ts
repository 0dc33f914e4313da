import type { WriterHolder } from "../rows/writerHolder.js";
import { ConfigError } from "./base.js";

/**
 * Another flashindex process holds the database's one-writer lock (a SQLite file's sidecar lock, a
 * Postgres schema's advisory lock): exit 2, naming that process when it has recorded itself.
 */
export class WriterBusyError extends ConfigError {
  override name = "WriterBusyError";
  /** `where` names the database (a file path, or a redacted postgres URL with its schema); `field` the setting to change. */
  constructor(databasePath: string, holder: WriterHolder | undefined, field = "database.path") {
    const who =
      holder === undefined
        ? "(it has not recorded itself yet: it is still starting)"
        : `(pid ${holder.pid} on ${holder.host}, '${holder.command}', since ${holder.startedAt})`;
    super(
      field,
      `${databasePath} is being written by another flashindex process ${who}; stop it or use another ${field}`,
    );
  }
}
