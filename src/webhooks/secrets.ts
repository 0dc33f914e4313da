import type { WebhookConfig } from "../config/types.js";
import { ConfigError } from "../errors/base.js";
import { looksLikeSecret } from "../config/parseWebhooks.js";

/**
 * Reads each subscription's signing secret from the environment variable it names, once at start.
 * A missing or empty one is a config error naming the variable (never a value, nor a name that looks
 * like a secret).
 */
export function readWebhookSecrets(
  hooks: readonly WebhookConfig[],
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  return hooks.map((hook, i) => {
    const secret = env[hook.secretEnv];
    if (secret === undefined || secret === "") {
      const variable = looksLikeSecret(hook.secretEnv)
        ? "it names (not shown: the name looks like a secret itself)"
        : hook.secretEnv;
      throw new ConfigError(
        `webhooks[${i}].secretEnv`,
        `the environment variable ${variable} is not set (it must hold the signing secret)`,
      );
    }
    return secret;
  });
}
