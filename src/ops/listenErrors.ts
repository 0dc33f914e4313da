import { ConfigError } from "../errors/base.js";

/** Where a server tried to listen, and the config key or flag that changes it (for the message). */
export type ListenTarget = { host: string; port: number; key: string };

/** Node's errors for an address a server cannot take; each is the user's to fix by choosing another. */
const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: "is already in use by another process",
  EACCES: "is not allowed for this user (ports below 1024 need privileges)",
  EADDRNOTAVAIL: "is not an address of this machine",
  ERR_SOCKET_BAD_PORT: "is not a valid port (0 to 65535)",
};

/** True for an error that means "this host:port cannot be listened on". */
export function isListenError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && code in LISTEN_REASONS;
}

/**
 * Turns a failed listen into one line naming the address and the key or flag that changes it
 * (ConfigError, exit 2); any other error is returned unchanged.
 */
export function asListenError(error: unknown, target: ListenTarget): unknown {
  if (!isListenError(error)) return error;
  const reason = LISTEN_REASONS[(error as { code: string }).code];
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  return new ConfigError(
    target.key,
    `${host}:${target.port} ${reason}; choose another with ${target.key} (0 picks a free port)`,
  );
}
