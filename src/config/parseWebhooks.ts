import { ConfigError } from "../errors.js";
import { join, optional, readAddress, readEnum, readInteger, readObject, readString, readUrl } from "./fields.js";
import { DEFAULTS, WEBHOOK_EVENT_TYPES, type WebhookConfig, type WebhookDeliveryConfig } from "./types.js";

/** An environment variable name as POSIX shells accept it. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `webhooks`: an array of `{ url, events?, tokens?, addresses?, secretEnv }`; each URL at most once. */
export function parseWebhooks(value: unknown): WebhookConfig[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigError("webhooks", "expected an array of { url, secretEnv, events?, tokens?, addresses? }");
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const path = join("webhooks", i);
    const hook = readObject(path, entry, ["url", "events", "tokens", "addresses", "secretEnv"]);
    if (hook.url === undefined) throw new ConfigError(join(path, "url"), "is required");
    const url = readUrl(join(path, "url"), hook.url, ["http:", "https:"]);
    if (seen.has(url)) throw new ConfigError(join(path, "url"), "is listed twice (one subscription per URL)");
    seen.add(url);
    if (hook.secretEnv === undefined)
      throw new ConfigError(join(path, "secretEnv"), "is required: the name of the environment variable holding the signing secret");
    const secretEnv = readString(join(path, "secretEnv"), hook.secretEnv);
    if (!ENV_NAME.test(secretEnv)) throw new ConfigError(join(path, "secretEnv"), "expected an environment variable name (letters, digits, _), not the secret itself");
    return {
      url,
      events: optional(hook.events, (v) => list(join(path, "events"), v, (p, e) => readEnum(p, e, WEBHOOK_EVENT_TYPES))),
      tokens: optional(hook.tokens, (v) => list(join(path, "tokens"), v, (p, a) => readAddress(p, a).toLowerCase())),
      addresses: optional(hook.addresses, (v) => list(join(path, "addresses"), v, (p, a) => readAddress(p, a).toLowerCase())),
      secretEnv,
    };
  });
}

/** `webhookDelivery`: retries, timeout and the bound on concurrent requests. */
export function parseWebhookDelivery(value: unknown): WebhookDeliveryConfig {
  const keys = ["maxAttempts", "maxHours", "initialDelayMs", "maxDelayMs", "timeoutMs", "concurrency", "retentionDays"] as const;
  const delivery = value === undefined ? {} : readObject("webhookDelivery", value, keys);
  const d = DEFAULTS.webhookDelivery;
  const int = (key: (typeof keys)[number], bounds: { min: number; max: number }) =>
    optional(delivery[key], (v) => readInteger(join("webhookDelivery", key), v, bounds));
  const initialDelayMs = int("initialDelayMs", { min: 1, max: 3_600_000 }) ?? d.initialDelayMs;
  const maxDelayMs = int("maxDelayMs", { min: 1, max: 86_400_000 }) ?? d.maxDelayMs;
  if (maxDelayMs < initialDelayMs) throw new ConfigError("webhookDelivery.maxDelayMs", `must be at least webhookDelivery.initialDelayMs (${initialDelayMs})`);
  return {
    maxAttempts: int("maxAttempts", { min: 1, max: 1_000 }) ?? d.maxAttempts,
    maxHours: int("maxHours", { min: 1, max: 24 * 30 }) ?? d.maxHours,
    initialDelayMs,
    maxDelayMs,
    timeoutMs: int("timeoutMs", { min: 50, max: 600_000 }) ?? d.timeoutMs,
    concurrency: int("concurrency", { min: 1, max: 256 }) ?? d.concurrency,
    retentionDays: int("retentionDays", { min: 1, max: 3_650 }) ?? d.retentionDays,
  };
}

function list<T>(path: string, value: unknown, read: (path: string, item: unknown) => T): T[] {
  if (!Array.isArray(value) || value.length === 0) throw new ConfigError(path, "expected a non-empty array (leave it out to match everything)");
  return value.map((item, i) => read(join(path, i), item));
}
