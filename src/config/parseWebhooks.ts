import { ConfigError } from "../errors/base.js";
import { integerBoundsAt, keysAt } from "./configSchema.js";
import {
  join,
  optional,
  readAddress,
  readBoolean,
  readEnum,
  readInteger,
  readObject,
  readString,
  readUrl,
} from "./fields.js";
import { privateHostOf } from "./privateAddresses.js";
import {
  DEFAULTS,
  WEBHOOK_EVENT_TYPES,
  type WebhookConfig,
  type WebhookDeliveryConfig,
} from "./types.js";

/**
 * Prefixes signing secrets and API keys are issued with (Svix/Stripe-style `whsec_`, Stripe `sk_`,
 * `rk_`, GitHub `ghp_`, Slack `xox`): a secretEnv starting with one is the secret pasted by mistake.
 */
const SECRET_PREFIXES = /^(?:whsec_|sk_|rk_|ghp_|gho_|github_pat_|xox[abpr])/i;

/**
 * Whether an environment variable name given as `secretEnv` looks like a secret itself: a known secret
 * prefix, or a long run with lower-case letters and digits mixed (variable names are words in capitals).
 * Such a value is never repeated in a message.
 */
export function looksLikeSecret(name: string): boolean {
  if (SECRET_PREFIXES.test(name)) return true;
  return name.length >= 20 && /[a-z]/.test(name) && /[0-9]/.test(name) && !name.includes("_");
}

/** An environment variable name as POSIX shells accept it. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `webhooks`: an array of `{ url, events?, tokens?, addresses?, secretEnv, allowPrivateTargets? }`; each
 * URL at most once, without user:password (the receiver would never see them), and not on a loopback,
 * link-local or private address unless `allowPrivateTargets` (names are checked again once resolved).
 */
export function parseWebhooks(value: unknown): WebhookConfig[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new ConfigError(
      "webhooks",
      "expected an array of { url, secretEnv, events?, tokens?, addresses? }",
    );
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const path = join("webhooks", i);
    const hook = readObject(path, entry, keysAt("webhooks[]"));
    if (hook.url === undefined) throw new ConfigError(join(path, "url"), "is required");
    const url = readUrl(join(path, "url"), hook.url, ["http:", "https:"]);
    const allowPrivateTargets =
      optional(hook.allowPrivateTargets, (v) =>
        readBoolean(join(path, "allowPrivateTargets"), v),
      ) ?? false;
    checkTarget(path, new URL(url), allowPrivateTargets);
    if (seen.has(url))
      throw new ConfigError(join(path, "url"), "is listed twice (one subscription per URL)");
    seen.add(url);
    if (hook.secretEnv === undefined)
      throw new ConfigError(
        join(path, "secretEnv"),
        "is required: the name of the environment variable holding the signing secret",
      );
    const secretEnv = readString(join(path, "secretEnv"), hook.secretEnv);
    if (!ENV_NAME.test(secretEnv) || looksLikeSecret(secretEnv))
      throw new ConfigError(
        join(path, "secretEnv"),
        "expected an environment variable name (letters, digits, _), not the secret itself",
      );
    return {
      url,
      events: optional(hook.events, (v) =>
        list(join(path, "events"), v, (p, e) => readEnum(p, e, WEBHOOK_EVENT_TYPES)),
      ),
      tokens: optional(hook.tokens, (v) =>
        list(join(path, "tokens"), v, (p, a) => readAddress(p, a).toLowerCase()),
      ),
      addresses: optional(hook.addresses, (v) =>
        list(join(path, "addresses"), v, (p, a) => readAddress(p, a).toLowerCase()),
      ),
      secretEnv,
      allowPrivateTargets,
    };
  });
}

/** Refuses credentials in the URL and, unless allowed, a host that is plainly not public; never echoes the URL. */
function checkTarget(path: string, url: URL, allowPrivateTargets: boolean): void {
  if (url.username !== "" || url.password !== "")
    throw new ConfigError(
      join(path, "url"),
      "must not hold user:password credentials (they would never reach the receiver): authenticate it by the signature",
    );
  const range = allowPrivateTargets ? undefined : privateHostOf(url);
  if (range !== undefined)
    throw new ConfigError(
      join(path, "url"),
      `its host ${url.hostname} is a ${range} address: webhook targets on loopback, link-local or private networks are refused unless ${join(path, "allowPrivateTargets")} is true`,
    );
}

/** `webhookDelivery`: retries, timeout and the bound on concurrent requests. */
export function parseWebhookDelivery(value: unknown): WebhookDeliveryConfig {
  const delivery =
    value === undefined ? {} : readObject("webhookDelivery", value, keysAt("webhookDelivery"));
  const d = DEFAULTS.webhookDelivery;
  const int = (key: keyof WebhookDeliveryConfig) =>
    optional(delivery[key], (v) =>
      readInteger(join("webhookDelivery", key), v, integerBoundsAt(`webhookDelivery.${key}`)),
    );
  const initialDelayMs = int("initialDelayMs") ?? d.initialDelayMs;
  const maxDelayMs = int("maxDelayMs") ?? d.maxDelayMs;
  if (maxDelayMs < initialDelayMs)
    throw new ConfigError(
      "webhookDelivery.maxDelayMs",
      `must be at least webhookDelivery.initialDelayMs (${initialDelayMs})`,
    );
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
  if (!Array.isArray(value) || value.length === 0)
    throw new ConfigError(path, "expected a non-empty array (leave it out to match everything)");
  return value.map((item, i) => read(join(path, i), item));
}
