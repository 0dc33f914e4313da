import { ConfigError } from "../errors/base.js";
import { integerBoundsAt, keysAt } from "./configSchema.js";
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
    const hook = readObject(path, entry, keysAt("webhooks[]"));
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
  const delivery = value === undefined ? {} : readObject("webhookDelivery", value, keysAt("webhookDelivery"));
  const d = DEFAULTS.webhookDelivery;
  const int = (key: keyof WebhookDeliveryConfig) =>
    optional(delivery[key], (v) => readInteger(join("webhookDelivery", key), v, integerBoundsAt(`webhookDelivery.${key}`)));
  const initialDelayMs = int("initialDelayMs") ?? d.initialDelayMs;
  const maxDelayMs = int("maxDelayMs") ?? d.maxDelayMs;
  if (maxDelayMs < initialDelayMs) throw new ConfigError("webhookDelivery.maxDelayMs", `must be at least webhookDelivery.initialDelayMs (${initialDelayMs})`);
  return {
    maxAttempts: int("maxAttempts") ?? d.maxAttempts,
    maxHours: int("maxHours") ?? d.maxHours,
    initialDelayMs,
    maxDelayMs,
    timeoutMs: int("timeoutMs") ?? d.timeoutMs,
    concurrency: int("concurrency") ?? d.concurrency,
    retentionDays: int("retentionDays") ?? d.retentionDays,
  };
}

function list<T>(path: string, value: unknown, read: (path: string, item: unknown) => T): T[] {
  if (!Array.isArray(value) || value.length === 0) throw new ConfigError(path, "expected a non-empty array (leave it out to match everything)");
  return value.map((item, i) => read(join(path, i), item));
}
