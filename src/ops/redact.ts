/**
 * Strips credentials from an RPC URL before it reaches a log line, an error or a metric label:
 * user:password, and API keys in the path or query (Alchemy `/v2/<key>`, Infura `/v3/<key>`, `?apikey=`).
 */
export function redactUrl(url: string): string {
  return redacted(url, (parsed) =>
    parsed.pathname !== "/" && parsed.pathname !== "" ? "/***" : "",
  );
}

/** Replaces every URL found in free text (error messages from fetch, ws or pg) with its redacted form. */
export function redactText(text: string): string {
  return text
    .replace(/\b(?:https?|wss?):\/\/[^\s"'<>]+/g, (match) =>
      withoutTrailingPunctuation(match, redactUrl),
    )
    .replace(/\bpostgres(?:ql)?:\/\/[^\s"'<>]+/g, (match) =>
      withoutTrailingPunctuation(match, redactDatabaseUrl),
    );
}

/**
 * Redacts a URL found in prose without the punctuation that follows it there ("(last from
 * http://host:8545):" ends in "):"): read with it, the port would not parse and the URL would show
 * as "<invalid url>".
 */
function withoutTrailingPunctuation(match: string, redact: (url: string) => string): string {
  const [, url, tail] = /^(.*?)([).,;:!?\]}]*)$/s.exec(match)!;
  return `${redact(url!)}${tail}`;
}

/**
 * A Postgres URL as it may be shown: host, port and database; user, password and parameters
 * (`?password=`, `sslkey=`…) never.
 */
export function redactDatabaseUrl(url: string): string {
  return redacted(url, (parsed) => parsed.pathname);
}

/** Scheme, `***@` for any credentials, host and port, the path as `shownPath` gives it, `?***` for any query. */
function redacted(url: string, shownPath: (parsed: URL) => string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "<invalid url>";
  }
  const host = parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  const hasCredentials = parsed.username !== "" || parsed.password !== "";
  return `${parsed.protocol}//${hasCredentials ? "***@" : ""}${host}${shownPath(parsed)}${parsed.search !== "" ? "?***" : ""}`;
}
