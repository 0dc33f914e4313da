import type { WebhookConfig } from "../config/types.js";
import { ConfigError } from "../errors/base.js";

/**
 * Reads each subscription's signing secret from the environment variable it names, once at start.
 * A missing or empty one is a config error naming the variable (never the value).
 */
export function readWebhookSecrets(hooks: readonly WebhookConfig[], env: NodeJS.ProcessEnv = process.env): string[] {
  return hooks.map((hook, i) => {
    const secret = env[hook.secretEnv];
    if (secret === undefined || secret === "")
      throw new ConfigError(`webhooks[${i}].secretEnv`, `the environment variable ${hook.secretEnv} is not set (it must hold the signing secret)`);
    return secret;
  });
}
