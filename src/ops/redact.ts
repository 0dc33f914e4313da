/**
 * Strips credentials from an RPC URL before it reaches a log line, an error or a metric label:
 * user:password, and API keys in the path or query (Alchemy `/v2/<key>`, Infura `/v3/<key>`, `?apikey=`).
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "<invalid url>";
  }
  const host = parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  const hasCredentials = parsed.username !== "" || parsed.password !== "";
  const hasPath = parsed.pathname !== "/" && parsed.pathname !== "";
  const hasQuery = parsed.search !== "";
  return `${parsed.protocol}//${hasCredentials ? "***@" : ""}${host}${hasPath ? "/***" : ""}${hasQuery ? "?***" : ""}`;
}

/** Replaces every URL found in free text (error messages from fetch, ws or pg) with its redacted form. */
export function redactText(text: string): string {
  return text
    .replace(/\b(?:https?|wss?):\/\/[^\s"'<>]+/g, (match) => redactUrl(match))
    .replace(/\bpostgres(?:ql)?:\/\/[^\s"'<>]+/g, (match) => redactDatabaseUrl(match));
}

/**
 * A Postgres URL as it may be shown: host, port and database; user, password and parameters
 * (`?password=`, `sslkey=`…) never.
 */
export function redactDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "<invalid url>";
  }
  const host = parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  const hasCredentials = parsed.username !== "" || parsed.password !== "";
  return `${parsed.protocol}//${hasCredentials ? "***@" : ""}${host}${parsed.pathname}${parsed.search !== "" ? "?***" : ""}`;
}
