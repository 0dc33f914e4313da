import type { Address } from "viem";
import type { Config } from "../config/types.js";
import { BaseError, RetryableError, ShutdownError } from "../errors/base.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { Store } from "../store/store.js";
import type { RegistrationClient } from "./registrationClient.js";
import { exponentialBackoff, withRetry } from "../ops/withRetry.js";

/** First retry delay after a temporary registration failure; doubles per attempt, with full jitter. */
export const REGISTRATION_RETRY_INITIAL_DELAY_MS = 1_000;
/** Ceiling of the retry delay: a service that stays down is asked about every few minutes at most. */
export const REGISTRATION_RETRY_MAX_DELAY_MS = 5 * 60_000;

export type RegistrationDeps = {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
  store: Store;
};

export type RegistrationOptions = {
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Clock for the stored times, unix ms. */
  now?: () => number;
};

/**
 * Registers every `config.registration.wallets` entry in the background and returns at once: indexing
 * never waits for the registration API. Temporary failures are retried with exponential backoff until
 * success or shutdown; a refusal (4xx) is logged and that wallet left alone. `done` settles when every
 * wallet is registered, given up or shutdown started; it never rejects.
 */
export function registerConfiguredWallets(
  deps: RegistrationDeps,
  client: RegistrationClient,
  options: RegistrationOptions = {},
): { done: Promise<void> } {
  const { config, metrics, shutdown, store } = deps;
  const logger = deps.logger.child({ component: "registration" });
  const initialDelayMs = options.initialDelayMs ?? REGISTRATION_RETRY_INITIAL_DELAY_MS;
  const maxDelayMs = options.maxDelayMs ?? REGISTRATION_RETRY_MAX_DELAY_MS;
  const now = options.now ?? Date.now;

  async function registerOne(wallet: Address): Promise<void> {
    let attempts = 0;
    let builderCode: string;
    try {
      builderCode = await withRetry(
        async () => {
          attempts++;
          return (await client.register(wallet, { signal: shutdown.signal })).builderCode;
        },
        {
          retryCount: Number.POSITIVE_INFINITY,
          shouldRetry: ({ error }) => error instanceof RetryableError && !shutdown.isKilled(),
          delay: exponentialBackoff({ initialDelayMs, maxDelayMs }),
          onRetry: ({ error, delayMs }) => {
            metrics.registrationRequests.inc({ outcome: "retryable" });
            logger.warn({
              msg: "Failed to register wallet, retrying",
              wallet,
              attempt: attempts,
              retry_in_ms: delayMs,
              error: (error as RetryableError).shortMessage,
            });
          },
          signal: shutdown.signal,
        },
      );
    } catch (error) {
      if (error instanceof ShutdownError || shutdown.isKilled()) return;
      metrics.registrationRequests.inc({ outcome: "rejected" });
      logger.error({
        msg: "Failed to register wallet, giving up",
        wallet,
        attempt: attempts,
        error: error instanceof BaseError ? error.shortMessage : String(error),
      });
      return;
    }
    metrics.registrationRequests.inc({ outcome: "ok" });
    // The daemon may have closed the database while the answer was on its way.
    if (store.isClosed()) return;
    const saved = await store.saveRegistration(wallet, builderCode, now());
    if (saved.status === "changed") {
      // Codes are meant to be stable per wallet: transactions already attributed carry the old one.
      logger.error({
        msg: "Detected a changed builder code for a registered wallet",
        wallet,
        builder_code: builderCode,
        previous_code: saved.previousCode,
      });
    } else {
      logger.info({
        msg: "Registered wallet",
        wallet,
        builder_code: builderCode,
        status: saved.status,
        attempts,
      });
    }
  }

  // A wallet listed twice (say in two cases) is registered once.
  const wallets = [
    ...new Map(
      config.registration.wallets.map((wallet) => [wallet.toLowerCase(), wallet]),
    ).values(),
  ];
  const done = Promise.all(
    wallets.map((wallet) =>
      registerOne(wallet).catch((error: unknown) => {
        if (error instanceof ShutdownError) return;
        // A bug or a storage failure of ours: registration is best effort and must not take the daemon down.
        logger.error({
          msg: "Failed to register wallet, giving up",
          wallet,
          error: error instanceof Error ? error.message : String(error),
        });
      }),
    ),
  ).then(() => undefined);
  return { done };
}
