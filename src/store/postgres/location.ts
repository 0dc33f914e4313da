import { redactDatabaseUrl } from "../../ops/redact.js";

/** `postgres://host:5432/db (schema flashindex)`, credentials redacted: how messages name the database. */
export function describeLocation(url: string, schema: string): string {
  return `${redactDatabaseUrl(url)} (schema ${schema})`;
}
